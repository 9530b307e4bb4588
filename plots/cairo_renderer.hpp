// The renderer for files: cairo draws PNG and PDF (fonts embedded); SVG is written element by
// element (svg_writer.hpp) so its text stays text. Text in DejaVu Sans; text is measured with cairo.
#pragma once
#include <memory>
#include <string>

#include "plots/renderer.hpp"

namespace rsim::plots {

enum class Format { PNG, SVG, PDF };
const char* format_ext(Format f);

class CairoRenderer : public Renderer {
 public:
  // PNG pixels = points × dpi / 72.
  CairoRenderer(Format format, double dpi = 150);
  ~CairoRenderer() override;
  void begin(double width, double height) override;
  void end() override;
  void polyline(const std::vector<P>& pts, const LineStyle& style) override;
  void rect(const Rect& r, const Color& fill, const LineStyle* stroke) override;
  void hatch(const Rect& r, const Color& color) override;
  void marker(P at, Marker m, double size, const Color& fill, const Color& edge) override;
  void text(P at, const std::string& s, double size, const Color& c, double angle, Anchor anchor, bool bold) override;
  TextBox measure(const std::string& s, double size, bool bold) override;
  void clip(const Rect& r) override;
  void unclip() override;
  // SVG for report.html: data points carry their tooltips (tip()); files are drawn without.
  void keep_tips() { tips_ = true; }
  void tip(const std::string& text) override;

  // The finished file's bytes (after end()). Deterministic for SVG and PDF: no timestamps.
  const std::string& bytes() const { return out_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Format format_;
  double dpi_;
  bool tips_ = false;
  std::string out_;
};

}  // namespace rsim::plots
