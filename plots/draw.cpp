#include "plots/draw.hpp"

#include <algorithm>
#include <cmath>

#include "plots/draw_internal.hpp"

namespace rsim::plots {
using namespace layout;

// A subtitle's essentials (see draw.hpp).
std::string short_subtitle(const std::string& full) {
  std::string out;
  size_t pos = 0, i = 0;
  const std::string sep = " · ";
  while (pos <= full.size()) {
    const size_t next = full.find(sep, pos);
    const std::string part = full.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    bool keep = i == 0;
    for (const char* k : {"execution:", "launch", "hatched", "dashed", "dotted", "hollow", "not drawn"}) keep = keep || part.find(k) != std::string::npos;
    if (keep && !part.empty()) out += (out.empty() ? "" : sep) + part;
    if (next == std::string::npos) break;
    pos = next + sep.size();
    ++i;
  }
  return out;
}

// Up to four layout passes: each lays the chart out and paints it; a pass that finds a legend
// with no free corner, a key with no room, or labels that need a key changes the plan and
// starts over (the renderer's begin() discards what an earlier pass drew).
DrawReport draw(const Figure& figure, Renderer& r) {
  Figure f = styled(figure);
  const std::vector<LegendEntry> legend0 = f.legend;
  const Sizes Z = sizes_for(f);
  Plan plan;
  // a title wider than the canvas shrinks (not under 6 pt), then ends in an ellipsis
  plan.title_size = Z.title;
  // a printed figure has little height to give: a title shrinks further before it takes two lines
  plan.title = title_lines(r, f.title, plan.title_size, f.width - 20, f.fixed_size ? 0.6 : 0.85);
  plan.W = f.width;
  for (size_t i = 0; i < f.points.size(); ++i)
    if (!f.points[i].label.empty()) plan.labelled.push_back(i);
  plan.number.assign(f.points.size(), 0);
  if (f.allow_key && plan.labelled.size() > 24)
    for (size_t k = 0; k < plan.labelled.size(); ++k) plan.number[plan.labelled[k]] = static_cast<int>(k + 1);
  plan.sub_lines = wrap_subtitle(r, f.subtitle, Z.subtitle, plan.W - 20);
  plan.sub_step = r.measure("0", Z.subtitle, false).ascent + 5;
  const HeatScale heat = f.heatmap ? heat_scale(*f.heatmap, r, Z.tick - 1) : HeatScale{};

  DrawReport rep;
  rep.canvas = Rect{0, 0, plan.W, f.height};
  for (int pass = 0; pass < 4; ++pass) {
    rep = DrawReport{};
    f.legend = legend0;
    if (plan.refs_in_legend)  // each labelled reference line as a legend entry: its line and its text
      for (const auto& ref : f.refs)
        if (!ref.label.empty()) f.legend.push_back(LegendEntry{ref.label, true, ref.style, false, {}, {}});
    rep.canvas = Rect{0, 0, plan.W, f.height};
    Pass p(r, f, Z, rep, heat);
    layout_axes(p, plan);
    if (!layout_key(p, plan, pass)) continue;
    layout_legend(p, plan);
    place_plot(p, plan);

    r.begin(plan.W, f.height);
    r.rect(rep.canvas, rgb(0xFFFFFF), nullptr);
    paint_titles(p, plan);
    paint_grid(p);
    if (p.has_heat) paint_heatmap(r, rep, *f.heatmap, heat, p.plot, f.height, Z);
    paint_bars(p);
    paint_lines(p);
    paint_bar_labels(p);
    paint_axes(p);
    place_line_labels(p);
    if (!place_reference_labels(p, plan) && pass < 3) {
      plan.refs_in_legend = true;
      continue;
    }
    if (!place_legend(p, plan, pass)) continue;
    p.obs.quads = rep.line_labels;
    paint_points(p);
    if (place_point_labels(p, plan) && pass < 3 && !plan.no_key) {
      // number every labelled point so the key reads in order, and lay out again with the key
      for (size_t k = 0; k < plan.labelled.size(); ++k) plan.number[plan.labelled[k]] = static_cast<int>(k + 1);
      continue;
    }
    paint_key(p, plan);
    r.end();
    return rep;
  }
  return rep;
}

}  // namespace rsim::plots
