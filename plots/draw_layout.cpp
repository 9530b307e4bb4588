// Layout: margins for titles and ticks, the numbered key, the legend, the plot rectangle.
#include "plots/draw_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsim::plots::layout {

// Margins for the title and subtitle above, the tick labels and axis titles left and below; x
// tick labels turn 45° when they would not fit side by side (numbers first try every other one).
void layout_axes(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  p.top = 10;
  for (const auto& line : plan.title) p.top += r.measure(line, plan.title_size, true).ascent + 6;
  if (!plan.sub_lines.empty()) p.top += plan.sub_step * static_cast<double>(plan.sub_lines.size()) + 3;
  p.top += 6;
  p.yt = major_ticks(f.y);
  p.xt = major_ticks(f.x);
  if (p.has_heat) {
    p.yt.clear();
    p.xt.clear();
    for (size_t i = 0; i < f.heatmap->ycats.size(); ++i) p.yt.push_back(static_cast<double>(i));
    for (size_t i = 0; i < f.heatmap->xcats.size(); ++i) p.xt.push_back(static_cast<double>(i));
  }
  double ytick_w = 0;
  for (double v : p.yt) ytick_w = std::max(ytick_w, r.measure(p.ylabel(v), p.Z.tick, false).width);
  p.left = 10 + (f.y.title.empty() ? 0 : r.measure(f.y.title, p.Z.axis_title, false).ascent + 8) + ytick_w + 8;
  if (!f.y.title.empty()) {
    // the side it runs along: the canvas below the titles, less the x tick labels and x title
    const double side = f.height - p.top - 10 - (r.measure("0", p.Z.axis_title, false).ascent + 8) - (r.measure("0", p.Z.tick, false).ascent + 12);
    p.y_title_two = f.y.title.find(' ') != std::string::npos && r.measure(f.y.title, p.Z.axis_title, false).width * std::max(0.85, 6.0 / p.Z.axis_title) > side;
    if (p.y_title_two) p.left += 1.3 * r.measure(f.y.title, p.Z.axis_title, false).ascent + 1;
  }
  double xlabel_w = 0;
  for (double v : p.xt) xlabel_w = std::max(xlabel_w, r.measure(p.xlabel(v), p.Z.tick, false).width);
  double approx_plot_w = plan.W - p.left - 16;
  p.rotate_x = !p.xt.empty() && (xlabel_w + 6) * static_cast<double>(p.xt.size()) > approx_plot_w;
  if (p.rotate_x && f.x.categories.empty() && !p.has_heat && p.xt.size() > 3) {
    // numbers read better level than turned: label every other tick instead
    std::vector<double> half;
    for (size_t i = 0; i < p.xt.size(); i += 2) half.push_back(p.xt[i]);
    if ((xlabel_w + 6) * static_cast<double>(half.size()) <= approx_plot_w) {
      p.xt = half;
      p.rotate_x = false;
    }
  }
  double xlabels_h = p.rotate_x ? xlabel_w * std::sin(M_PI / 4) + 8 : r.measure("0", p.Z.tick, false).ascent;
  p.bottom = 10 + xlabels_h + 8 + (f.x.title.empty() ? 0 : r.measure(f.x.title, p.Z.axis_title, false).ascent + 10);
  if (p.rotate_x) p.left = std::max(p.left, xlabel_w * std::cos(M_PI / 4) + 12);
  p.right = 16;
  // a level label of the last tick at the axis's right end reaches half its width past the plot:
  // the margin makes room for it (the slides roofline's "10000" read "1000", clipped)
  if (!p.rotate_x && !p.has_heat && f.x.categories.empty() && !p.xt.empty() && f.x.max > f.x.min) {
    const double last = p.xt.back();
    const bool log = f.x.scale == Scale::Log && last > 0 && f.x.min > 0;
    const double frac = log ? (std::log(last) - std::log(f.x.min)) / (std::log(f.x.max) - std::log(f.x.min)) : (last - f.x.min) / (f.x.max - f.x.min);
    if (frac > 0.9) p.right = std::max(p.right, r.measure(p.xlabel(last), p.Z.tick, false).width / 2 + 6);
  }
}

// The numbered key beside the plot. At a printed size without room for every line of it, the
// key is given up (labels only where they fit) and the pass starts over: returns false.
bool layout_key(Pass& p, Plan& plan, int pass) {
  if (std::none_of(plan.number.begin(), plan.number.end(), [](int n) { return n > 0; })) return true;
  const Figure& f = p.f;
  double key_w = 0;
  for (size_t i = 0; i < f.points.size(); ++i)
    if (plan.number[i] > 0) p.key_lines.push_back(std::to_string(plan.number[i]) + "  " + truncate(f.points[i].label, 40));
  for (const auto& k : p.key_lines) key_w = std::max(key_w, p.r.measure(k, p.Z.label, false).width);
  key_w = std::max(key_w, p.r.measure(key_title(p.key_lines), p.Z.label, true).width);  // (its heading too)
  // lines below the "key" heading, from the plot's top to the canvas's bottom; more go to further columns
  const double step = p.Z.label * 1.375;
  const size_t rows = static_cast<size_t>(std::max(1.0, std::floor((f.height - 8 - (p.top + 8) - step) / step)));
  const size_t cols = (p.key_lines.size() + rows - 1) / rows;
  // the last x tick's label reaches past the plot's right edge by half its width: the key starts beyond it
  p.key_gap = p.xt.empty() || p.rotate_x ? 0 : p.r.measure(p.xlabel(p.xt.back()), p.Z.tick, false).width / 2;
  const double need_w = static_cast<double>(cols) * (key_w + 14) + p.key_gap;
  if ((plan.W - p.left - p.right - need_w < 0.5 * plan.W || (f.fixed_size && cols > 1)) && pass < 3) {
    plan.no_key = true;
    std::fill(plan.number.begin(), plan.number.end(), 0);
    plan.sub_lines.push_back("labels that do not fit: in the plot data CSV");
    return false;
  }
  p.key_rows = rows;
  p.key_col_w = key_w + 14;
  p.right += need_w;
  return true;
}

// The legend's size; one that fits no inside corner goes to the right or, at a printed size
// without room there, under the plot in as many columns as fit and at most a quarter of the
// height: two columns of shortened entries, then the first rows and a last entry that says
// where the rest is.
void layout_legend(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  Figure& f = p.f;
  const Sizes& Z = p.Z;
  const double W = plan.W;
  for (const auto& e : f.legend) p.legend_w = std::max(p.legend_w, r.measure(e.text, Z.legend, false).width);
  p.lg_marker = f.fixed_size ? 9 * Z.u : 17 * Z.u;
  p.lg_text = f.fixed_size ? 18 * Z.u : 32 * Z.u;
  if (!f.legend.empty()) {
    p.legend_w += p.lg_text + 6 * Z.u;
    p.legend_h = 8 * Z.u + Z.row * static_cast<double>(f.legend.size());
  }
  p.legend_below = plan.legend_outside && f.fixed_size && W - p.left - p.right - p.legend_w - 12 < 0.55 * W;
  if (!p.legend_below) {
    if (plan.legend_outside) p.right += p.legend_w + 12;
    return;
  }
  p.legend_cols = std::max<size_t>(1, std::min(f.legend.size(), static_cast<size_t>((W - 20) / p.legend_w)));
  size_t rows = (f.legend.size() + p.legend_cols - 1) / p.legend_cols;
  double max_h = f.height / 4;
  size_t max_rows = std::max<size_t>(1, static_cast<size_t>(max_h / Z.row));
  // more columns of shortened entries (at most three) before any entry is left out
  const size_t natural_cols = p.legend_cols;
  while (rows > max_rows && p.legend_cols < 3 && f.legend.size() > p.legend_cols) {
    ++p.legend_cols;
    rows = (f.legend.size() + p.legend_cols - 1) / p.legend_cols;
  }
  if (p.legend_cols > natural_cols) {
    p.legend_w = (W - 20) / static_cast<double>(p.legend_cols);
    // what-if variants share a long name: drop the common part first ("…@2.2GHz: …"), so
    // what tells the entries apart stays; the common start is the one two or more line entries
    // share (entries of another kind, like "derated roof", share nothing and are left out)
    auto shared = [](const std::string& a, const std::string& b) {
      size_t k = 0;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
      return k;
    };
    std::string common;
    size_t with_line = 0;
    for (size_t i = 0; i < f.legend.size(); ++i) {
      if (!f.legend[i].has_line) continue;
      ++with_line;
      for (size_t j = i + 1; j < f.legend.size() && common.empty(); ++j)
        if (f.legend[j].has_line && shared(f.legend[i].text, f.legend[j].text) > 4) common = f.legend[i].text.substr(0, shared(f.legend[i].text, f.legend[j].text));
    }
    for (const auto& e : f.legend)
      if (e.has_line && shared(common, e.text) > 4) common.resize(shared(common, e.text));
    while (!common.empty() && (static_cast<unsigned char>(common.back()) & 0xC0) == 0x80) common.pop_back();
    const double room = p.legend_w - p.lg_text - 4;
    for (auto& e : f.legend) {
      if (with_line > 1 && e.has_line && common.size() > 4 && e.text.compare(0, common.size(), common) == 0 && r.measure(e.text, Z.legend, false).width > room)
        e.text = "…" + e.text.substr(common.size());
      // whole words first ("h100_sxm 80…" from "h100_sxm 80 GiB"), letters only when one word is left
      while (r.measure(e.text, Z.legend, false).width > room) {
        std::string t = e.text;
        if (t.size() >= 3 && t.compare(t.size() - 3, 3, "…") == 0) t.resize(t.size() - 3);
        const size_t sp = t.find_last_of(' ');
        if (sp == std::string::npos || sp == 0) break;
        t.resize(sp);
        for (bool cut = true; cut;) {  // no dangling separator: " ·", ",", ":"
          cut = false;
          if (t.size() >= 2 && t.compare(t.size() - 2, 2, "\xC2\xB7") == 0) t.resize(t.size() - 2), cut = true;
          while (!t.empty() && (t.back() == ' ' || t.back() == ',' || t.back() == ':')) t.pop_back(), cut = true;
        }
        if (t.empty()) break;
        e.text = t + "…";
      }
      while (r.measure(e.text, Z.legend, false).width > room && e.text.size() > 4) e.text = shorten(e.text);
    }
  }
  if (rows > max_rows) {
    size_t keep = max_rows * p.legend_cols - 1;
    size_t more = f.legend.size() - keep;
    f.legend.resize(keep);
    f.legend.push_back(LegendEntry{"+" + std::to_string(more) + " more (plot data)", false, {}, false, {}, {}});
    rows = max_rows;
  }
  p.legend_h = 4 * Z.u + Z.row * static_cast<double>(rows);
  p.below_h = p.legend_h + 4;
  p.bottom += p.below_h;
}

// The plot rectangle, its transform, the x ticks thinned to what fits level, and the obstacles
// that label placement must avoid (markers, lines, references).
void place_plot(Pass& p, Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  p.cbar_w = p.has_heat ? 18 + 12 + 5 + p.heat.tick_w + 8 + r.measure("0", p.Z.tick, false).ascent + 8 : 0;
  p.right += p.cbar_w;
  if (!f.fixed_size && plan.W - p.left - p.right < 0.62 * f.width) plan.W = p.left + p.right + 0.62 * f.width;
  // at a printed size the plot keeps at least half the height: the subtitle's details (a caption
  // carries them; the plot data and report.md keep them) give way first, then its lines, the last first
  if (f.fixed_size && !plan.sub_lines.empty() && f.height - p.top - p.bottom < 0.5 * f.height) {
    std::vector<std::string> kept = wrap_subtitle(r, short_subtitle(f.subtitle), p.Z.subtitle, plan.W - 20);
    if (kept.size() < plan.sub_lines.size()) {
      p.top -= plan.sub_step * static_cast<double>(plan.sub_lines.size() - kept.size()) + (kept.empty() ? 3 : 0);
      plan.sub_lines = std::move(kept);
    }
  }
  while (f.fixed_size && !plan.sub_lines.empty() && f.height - p.top - p.bottom < 0.5 * f.height) {
    plan.sub_lines.pop_back();
    p.top -= plan.sub_step + (plan.sub_lines.empty() ? 3 : 0);
  }
  // the y title's side is known now (a legend under the plot shortens it): two lines if one would
  // shrink past 0.85 of its size
  if (!f.y.title.empty() && !p.y_title_two && f.y.title.find(' ') != std::string::npos) {
    const double side = f.height - 10 - p.below_h - (p.top - 4);
    if (r.measure(f.y.title, p.Z.axis_title, false).width * std::max(0.85, 6.0 / p.Z.axis_title) > side) {
      p.y_title_two = true;
      p.left += 1.3 * r.measure(f.y.title, p.Z.axis_title, false).ascent + 1;
    }
  }
  p.rep.canvas = Rect{0, 0, plan.W, f.height};
  p.plot = Rect{p.left, p.top, plan.W - p.left - p.right, f.height - p.top - p.bottom};
  p.rep.plot = p.plot;
  p.T = Transform{p.plot, &f.x, &f.y};
  // level tick labels that would touch their neighbour (a log axis crowds its right end) are
  // thinned from the right, so the largest value keeps its label
  if (!p.rotate_x && !p.has_heat && f.x.categories.empty() && p.xt.size() > 2) {
    std::vector<double> kept;
    double left_edge = 1e300;
    for (size_t i = p.xt.size(); i-- > 0;) {
      double w = r.measure(p.xlabel(p.xt[i]), p.Z.tick, false).width, x = p.T.tx(p.xt[i]);
      if (x + w / 2 + 6 <= left_edge) {
        kept.insert(kept.begin(), p.xt[i]);
        left_edge = x - w / 2;
      }
    }
    p.xt = kept;
  }
  if (p.has_heat) {
    p.hx.categories = f.heatmap->xcats;
    p.hx.min = -0.5, p.hx.max = static_cast<double>(p.hx.categories.size()) - 0.5;
    p.hy.categories = f.heatmap->ycats;
    p.hy.min = -0.5, p.hy.max = static_cast<double>(p.hy.categories.size()) - 0.5;
    p.T = Transform{p.plot, &p.hx, &p.hy};
  }
  const Transform& T = p.T;
  for (const auto& L : f.lines)
    for (size_t i = 0; i + 1 < L.pts.size(); ++i) p.obs.segments.push_back({T.to(L.pts[i]), T.to(L.pts[i + 1])});
  for (const auto& ref : f.refs) {
    if (ref.vertical) p.obs.segments.push_back({{T.tx(ref.value), p.plot.y}, {T.tx(ref.value), p.plot.y + p.plot.h}});
    else p.obs.segments.push_back({{p.plot.x, T.ty(ref.value)}, {p.plot.x + p.plot.w, T.ty(ref.value)}});
  }
  for (const auto& pt : f.points) {
    P s = T.to(pt.at);
    p.obs.boxes.push_back(Rect{s.x - pt.size / 2, s.y - pt.size / 2, pt.size, pt.size});
  }
  // labels stay inside the plot, away from its edges
  p.inner = Rect{p.plot.x + 2, p.plot.y + 2, p.plot.w - 4, p.plot.h - 4};
}

void paint_titles(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const double W = plan.W;
  double ty = 10;
  if (!p.f.title.empty()) {
    double x = p.plot.x;  // both lines start together, left on the plot (or further left to fit)
    for (const auto& line : plan.title) x = std::min(x, W - 10 - r.measure(line, plan.title_size, true).width);
    x = std::max(10.0, x);
    for (const auto& line : plan.title) {
      ty += r.measure(line, plan.title_size, true).ascent;
      p.text({x, ty}, line, plan.title_size, kText, 0, Anchor::Left, true);
      ty += 6;
    }
  }
  double sub_x = p.plot.x;
  for (const auto& l : plan.sub_lines) sub_x = std::min(sub_x, 10.0 + (W - 20 - r.measure(l, p.Z.subtitle, false).width));
  for (const auto& l : plan.sub_lines) {
    ty += plan.sub_step;
    p.text({sub_x, ty}, l, p.Z.subtitle, kMuted, 0, Anchor::Left, false);
  }
}

}  // namespace rsim::plots::layout
