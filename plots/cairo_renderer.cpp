#include "plots/cairo_renderer.hpp"

#include "plots/svg_writer.hpp"

#include <cairo-pdf.h>
#include <cairo.h>
#include <png.h>

#include <cctype>
#include <cmath>
#include <map>
#include <vector>
#include <stdexcept>

namespace rsim::plots {

const char* format_ext(Format f) {
  switch (f) {
    case Format::PNG: return "png";
    case Format::SVG: return "svg";
    case Format::PDF: return "pdf";
  }
  return "?";
}

struct CairoRenderer::Impl {
  cairo_surface_t* measure_surface = nullptr;
  cairo_t* measure_cr = nullptr;
  cairo_surface_t* surface = nullptr;
  cairo_t* cr = nullptr;
  std::string* sink = nullptr;
  SvgWriter svg;  // SVG is written element by element: text stays <text>
};

static cairo_status_t write_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// PNG through libpng with fast settings: cairo's own writer uses the slowest filters and level 6,
// which took two thirds of the time of a seed scenario's figures. The canvas is opaque: RGB.
static void write_png(cairo_surface_t* surface, std::string& out) {
  int w = cairo_image_surface_get_width(surface), h = cairo_image_surface_get_height(surface);
  int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) throw std::runtime_error("libpng: out of memory");
  std::vector<unsigned char> row(static_cast<size_t>(w) * 3);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("libpng: cannot encode the figure");
  }
  png_set_write_fn(
      png, &out, [](png_structp p, png_bytep d, png_size_t n) { static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(d), n); },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 3);
  png_set_filter(png, 0, PNG_FILTER_SUB | PNG_FILTER_UP);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y) {
    const uint32_t* px = reinterpret_cast<const uint32_t*>(data + static_cast<size_t>(y) * static_cast<size_t>(stride));
    for (int x = 0; x < w; ++x) {
      uint32_t v = px[x];  // 0xAARRGGBB, opaque
      row[static_cast<size_t>(x) * 3] = static_cast<unsigned char>((v >> 16) & 0xFF);
      row[static_cast<size_t>(x) * 3 + 1] = static_cast<unsigned char>((v >> 8) & 0xFF);
      row[static_cast<size_t>(x) * 3 + 2] = static_cast<unsigned char>(v & 0xFF);
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
}

static void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

CairoRenderer::CairoRenderer(Format format, double dpi) : impl_(std::make_unique<Impl>()), format_(format), dpi_(dpi) {
  impl_->measure_surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  impl_->measure_cr = cairo_create(impl_->measure_surface);
}

CairoRenderer::~CairoRenderer() {
  if (impl_->cr) cairo_destroy(impl_->cr);
  if (impl_->surface) cairo_surface_destroy(impl_->surface);
  cairo_destroy(impl_->measure_cr);
  cairo_surface_destroy(impl_->measure_surface);
}

void CairoRenderer::begin(double width, double height) {
  if (format_ == Format::SVG) {
    out_.clear();
    impl_->svg.begin(width, height);
    return;
  }
  if (impl_->cr) cairo_destroy(impl_->cr);
  if (impl_->surface) cairo_surface_destroy(impl_->surface);
  impl_->cr = nullptr;
  impl_->surface = nullptr;
  out_.clear();
  switch (format_) {
    case Format::PNG: {
      double s = dpi_ / 72.0;
      impl_->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(std::lround(width * s)), static_cast<int>(std::lround(height * s)));
      impl_->cr = cairo_create(impl_->surface);
      cairo_set_source_rgb(impl_->cr, 1, 1, 1);  // opaque white to the last pixel row
      cairo_paint(impl_->cr);
      cairo_scale(impl_->cr, s, s);
      break;
    }
    case Format::SVG: break;
    case Format::PDF:
      impl_->surface = cairo_pdf_surface_create_for_stream(write_to_string, &out_, width, height);
      // a fixed date keeps the file byte-identical from run to run
      cairo_pdf_surface_set_metadata(impl_->surface, CAIRO_PDF_METADATA_CREATE_DATE, "2000-01-01T00:00:00Z");
      cairo_pdf_surface_set_metadata(impl_->surface, CAIRO_PDF_METADATA_CREATOR, "rsim");
      impl_->cr = cairo_create(impl_->surface);
      break;
  }
  if (cairo_status(impl_->cr) != CAIRO_STATUS_SUCCESS) throw std::runtime_error("cairo: cannot create a drawing surface");
  cairo_set_line_join(impl_->cr, CAIRO_LINE_JOIN_ROUND);
}

void CairoRenderer::tip(const std::string& text) {
  if (tips_ && format_ == Format::SVG) impl_->svg.tip(text);
}

void CairoRenderer::end() {
  if (format_ == Format::SVG) {
    out_ = impl_->svg.end();
    return;
  }
  cairo_t* cr = impl_->cr;
  if (format_ == Format::PNG) {
    cairo_surface_flush(impl_->surface);
    write_png(impl_->surface, out_);
  } else {
    cairo_show_page(cr);
    cairo_surface_finish(impl_->surface);
  }
  cairo_destroy(cr);
  cairo_surface_destroy(impl_->surface);
  impl_->cr = nullptr;
  impl_->surface = nullptr;
}

static void set_color(cairo_t* cr, const Color& c) { cairo_set_source_rgba(cr, c.r, c.g, c.b, c.a); }

static void set_line(cairo_t* cr, const LineStyle& s) {
  set_color(cr, s.color);
  cairo_set_line_width(cr, s.width);
  double w = s.width;
  switch (s.dash) {
    case Dash::Solid: cairo_set_dash(cr, nullptr, 0, 0); break;
    case Dash::Dashed: {
      double d[] = {5 * std::max(1.0, w * 0.8), 3 * std::max(1.0, w * 0.8)};
      cairo_set_dash(cr, d, 2, 0);
      break;
    }
    case Dash::Dotted: {
      double d[] = {1.2 * w, 2.2 * w};
      cairo_set_dash(cr, d, 2, 0);
      break;
    }
    case Dash::DashDot: {
      double d[] = {6 * w, 2 * w, 1.2 * w, 2 * w};
      cairo_set_dash(cr, d, 4, 0);
      break;
    }
  }
  cairo_set_line_cap(cr, s.dash == Dash::Dotted ? CAIRO_LINE_CAP_ROUND : CAIRO_LINE_CAP_BUTT);
}

void CairoRenderer::polyline(const std::vector<P>& pts, const LineStyle& style) {
  if (format_ == Format::SVG) return impl_->svg.polyline(pts, style);
  if (pts.size() < 2) return;
  cairo_t* cr = impl_->cr;
  set_line(cr, style);
  cairo_move_to(cr, pts[0].x, pts[0].y);
  for (size_t i = 1; i < pts.size(); ++i) cairo_line_to(cr, pts[i].x, pts[i].y);
  cairo_stroke(cr);
}

void CairoRenderer::rect(const Rect& r, const Color& fill, const LineStyle* stroke) {
  if (format_ == Format::SVG) return impl_->svg.rect(r, fill, stroke);
  cairo_t* cr = impl_->cr;
  cairo_rectangle(cr, r.x, r.y, r.w, r.h);
  if (fill.a > 0) {
    set_color(cr, fill);
    if (stroke) cairo_fill_preserve(cr);
    else cairo_fill(cr);
  }
  if (stroke) {
    set_line(cr, *stroke);
    cairo_stroke(cr);
  } else {
    cairo_new_path(cr);
  }
}

void CairoRenderer::hatch(const Rect& r, const Color& color) {
  if (format_ == Format::SVG) return impl_->svg.hatch(r, color);
  cairo_t* cr = impl_->cr;
  cairo_save(cr);
  cairo_rectangle(cr, r.x, r.y, r.w, r.h);
  cairo_clip(cr);
  set_line(cr, LineStyle{color, 0.7});
  for (double x = r.x - r.h; x < r.x + r.w; x += 4) {
    cairo_move_to(cr, x, r.y + r.h);
    cairo_line_to(cr, x + r.h, r.y);
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

void CairoRenderer::marker(P at, Marker m, double size, const Color& fill, const Color& edge) {
  if (format_ == Format::SVG) return impl_->svg.marker(at, m, size, fill, edge);
  cairo_t* cr = impl_->cr;
  double h = size / 2;
  auto poly = [&](int n, double rot, double radius) {
    for (int i = 0; i < n; ++i) {
      double a = rot + 2 * M_PI * i / n;
      double x = at.x + radius * std::cos(a), y = at.y - radius * std::sin(a);
      if (i == 0) cairo_move_to(cr, x, y);
      else cairo_line_to(cr, x, y);
    }
    cairo_close_path(cr);
  };
  switch (m) {
    case Marker::Circle: cairo_arc(cr, at.x, at.y, h, 0, 2 * M_PI); break;
    case Marker::Square: cairo_rectangle(cr, at.x - h * 0.88, at.y - h * 0.88, h * 1.76, h * 1.76); break;
    case Marker::TriangleUp: poly(3, M_PI / 2, h * 1.2); break;
    case Marker::TriangleDown: poly(3, -M_PI / 2, h * 1.2); break;
    case Marker::Diamond: poly(4, M_PI / 2, h * 1.15); break;
    case Marker::Pentagon: poly(5, M_PI / 2, h * 1.05); break;
    case Marker::Hexagon: poly(6, 0, h * 1.05); break;
    case Marker::Cross: {
      double t = h * 0.38;
      cairo_move_to(cr, at.x - t, at.y - h);
      for (auto [dx, dy] : std::initializer_list<std::pair<double, double>>{{t, -h}, {t, -t}, {h, -t}, {h, t}, {t, t}, {t, h}, {-t, h}, {-t, t}, {-h, t}, {-h, -t}, {-t, -t}})
        cairo_line_to(cr, at.x + dx, at.y + dy);
      cairo_close_path(cr);
      break;
    }
  }
  set_color(cr, fill);
  cairo_fill_preserve(cr);
  set_line(cr, LineStyle{edge, 0.7});
  cairo_stroke(cr);
}

void CairoRenderer::text(P at, const std::string& s, double size, const Color& c, double angle, Anchor anchor, bool bold) {
  if (format_ == Format::SVG) return impl_->svg.text(at, s, size, c, angle, anchor, bold);
  cairo_t* cr = impl_->cr;
  set_font(cr, size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  double dx = anchor == Anchor::Left ? 0 : anchor == Anchor::Center ? -e.x_advance / 2 : -e.x_advance;
  cairo_save(cr);
  cairo_translate(cr, at.x, at.y);
  cairo_rotate(cr, -angle);
  cairo_move_to(cr, dx, 0);
  set_color(cr, c);
  cairo_show_text(cr, s.c_str());
  cairo_new_path(cr);
  cairo_restore(cr);
}

TextBox CairoRenderer::measure(const std::string& s, double size, bool bold) {
  set_font(impl_->measure_cr, size, bold);
  cairo_font_extents_t fe;
  cairo_font_extents(impl_->measure_cr, &fe);
  cairo_text_extents_t e;
  cairo_text_extents(impl_->measure_cr, s.c_str(), &e);
  // ascent/descent of the font (not the glyphs), so boxes of one size line up
  return TextBox{e.x_advance, fe.ascent * 0.78, fe.descent * 0.7};
}

void CairoRenderer::clip(const Rect& r) {
  if (format_ == Format::SVG) return impl_->svg.clip(r);
  cairo_save(impl_->cr);
  cairo_rectangle(impl_->cr, r.x, r.y, r.w, r.h);
  cairo_clip(impl_->cr);
}

void CairoRenderer::unclip() {
  if (format_ == Format::SVG) return impl_->svg.unclip();
  cairo_restore(impl_->cr);
}

}  // namespace rsim::plots
