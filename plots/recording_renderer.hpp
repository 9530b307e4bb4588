// A renderer that records what is drawn (for tests and benchmarks); text is measured with cairo,
// so the layout is the one the real renderers get.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "plots/cairo_renderer.hpp"
#include "plots/renderer.hpp"

namespace rsim::plots {

class RecordingRenderer : public Renderer {
 public:
  struct Text {
    P at;
    std::string s;
    double size, angle;
    Anchor anchor;
    bool bold;
  };
  struct Polyline {
    std::vector<P> pts;
    LineStyle style;
  };
  struct MarkerCall {
    P at;
    Marker m;
    double size;
    Color fill, stroke;
  };
  struct RectCall {
    Rect r;
    Color fill;
  };
  std::vector<Text> texts;
  std::vector<Polyline> lines;
  std::vector<Rect> rects;
  std::vector<RectCall> fills;  // rects with their colour (hatches too: their colour over a rect)
  std::vector<MarkerCall> markers;
  double width = 0, height = 0;
  int begins = 0, ends = 0;

  RecordingRenderer() : measurer_(std::make_unique<CairoRenderer>(Format::PNG, 72)) {}
  void begin(double w, double h) override {
    *this = RecordingRenderer(std::move(measurer_), begins + 1);
    width = w, height = h;
  }
  void end() override { ++ends; }
  void polyline(const std::vector<P>& pts, const LineStyle& style) override { lines.push_back({pts, style}); }
  void rect(const Rect& r, const Color& fill, const LineStyle*) override { rects.push_back(r), fills.push_back({r, fill}); }
  void hatch(const Rect& r, const Color& c) override { fills.push_back({r, c}); }
  void marker(P at, Marker m, double size, const Color& fill, const Color& stroke) override { markers.push_back({at, m, size, fill, stroke}); }
  void text(P at, const std::string& s, double size, const Color&, double angle, Anchor anchor, bool bold) override {
    texts.push_back({at, s, size, angle, anchor, bold});
  }
  TextBox measure(const std::string& s, double size, bool bold) override { return measurer_->measure(s, size, bold); }
  void clip(const Rect&) override {}
  void unclip() override {}

 private:
  RecordingRenderer(std::unique_ptr<CairoRenderer> m, int b) : measurer_(std::move(m)) { begins = b; }
  std::unique_ptr<CairoRenderer> measurer_;
};

}  // namespace rsim::plots
