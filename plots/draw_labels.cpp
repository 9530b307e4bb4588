// Label placement: along lines, reference lines, the legend corner, point labels (collision-aware, with leaders).
#include "plots/draw_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsim::plots::layout {

// Whether a text's box crosses any of the segments (sampled every 2.5 pt).
bool crosses_lines(const Quad& q, const std::vector<std::pair<P, P>>& segs) {
  for (const auto& [sa, sb] : segs) {
    int n = std::max(8, static_cast<int>(std::hypot(sb.x - sa.x, sb.y - sa.y) / 2.5));
    for (int k = 0; k <= n; ++k)
      if (quad_overlaps(q, Rect{sa.x + (sb.x - sa.x) * k / n - 0.5, sa.y + (sb.y - sa.y) * k / n - 0.5, 1, 1}, 1)) return true;
  }
  return false;
}

// Labels written along their lines (roof values), at the preferred place or the nearest one
// clear of the other lines, markers and labels.
void place_line_labels(Pass& p) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  const double kLabel = p.Z.label;
  for (size_t li = 0; li < f.lines.size(); ++li) {
    const Line& L = f.lines[li];
    if (L.label.empty() || L.pts.size() < 2) continue;
    std::vector<std::pair<P, P>> others;
    for (size_t lj = 0; lj < f.lines.size(); ++lj) {
      if (lj == li) continue;
      const Line& O = f.lines[lj];
      for (size_t i = 0; i + 1 < O.pts.size(); ++i) others.push_back({T.to(O.pts[i]), T.to(O.pts[i + 1])});
    }
    // the visible part: sample the polyline in screen space, keep points inside the plot
    std::vector<P> vis;
    for (size_t i = 0; i + 1 < L.pts.size(); ++i) {
      P a = T.to(L.pts[i]), b = T.to(L.pts[i + 1]);
      for (int k = 0; k <= 40; ++k) {
        P q{a.x + (b.x - a.x) * k / 40.0, a.y + (b.y - a.y) * k / 40.0};
        if (q.x >= plot.x && q.x <= plot.x + plot.w && q.y >= plot.y && q.y <= plot.y + plot.h) vis.push_back(q);
      }
    }
    if (vis.size() < 2) continue;
    bool placed = false;
    // positions along the line, nearest to the preferred one first; the label, then its short form
    for (const std::string* text : {&L.label, &L.label_short}) {
      if (placed || text->empty()) continue;
      std::vector<double> fracs;
      for (int k = 1; k < 40; ++k) fracs.push_back(k / 40.0);
      std::stable_sort(fracs.begin(), fracs.end(), [&](double u, double v) { return std::fabs(u - L.label_at) < std::fabs(v - L.label_at); });
      for (double frac : fracs) {
        size_t i = std::min(vis.size() - 2, static_cast<size_t>(frac * static_cast<double>(vis.size() - 1)));
        P a = vis[i], b = vis[i + 1];
        double ang = -std::atan2(b.y - a.y, b.x - a.x);
        P up{-std::sin(ang), -std::cos(ang)};  // unit normal pointing up the screen
        double asc = r.measure("0", kLabel, false).ascent;
        // signed baseline distances from the line: preferred side first, then the other, then farther out
        double above1 = 5, below1 = -(5 + asc), above2 = 12, below2 = -(12 + asc);
        std::vector<double> offsets = L.label_above ? std::vector<double>{above1, below1, above2, below2}
                                                    : std::vector<double>{below1, above1, below2, above2};
        for (double sd : offsets) {
          if (placed) break;
          P at{a.x + up.x * sd, a.y + up.y * sd};
          Quad q = text_quad(r, at, *text, kLabel, ang, Anchor::Center, false);
          bool clash = false;
          for (const auto& pl : p.rep.line_labels) clash = clash || quads_overlap(q, pl, 2);
          for (const auto& b2 : p.obs.boxes) clash = clash || quad_overlaps(q, b2, 1);
          for (const auto& [sa, sb] : others) {
            if (clash) break;
            // sample the segment: a point inside the quad (grown by 1) is a crossing
            int n = std::max(8, static_cast<int>(std::hypot(sb.x - sa.x, sb.y - sa.y) / 2.5));
            for (int k = 0; k <= n && !clash; ++k) {
              P pt{sa.x + (sb.x - sa.x) * k / n, sa.y + (sb.y - sa.y) * k / n};
              clash = quad_overlaps(q, Rect{pt.x - 0.5, pt.y - 0.5, 1, 1}, 1);
            }
          }
          if (!clash && q.bounds().inside(p.inner)) {
            p.text(at, *text, kLabel, L.style.color, ang, Anchor::Center, false);
            p.rep.line_labels.push_back(q);
            placed = true;
          }
        }
        if (placed) break;
      }
    }
  }
}

// Reference labels (ridges, memory sizes): at an end of their line, on a side free of other
// lines and labels; when no spot is free, the least bad one on a light backing.
// Returns false when a label found no place clear of the other labels (the chart is laid out
// again with the references named in the legend).
bool place_reference_labels(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const Transform& T = p.T;
  const Rect& plot = p.plot;
  const double kLabel = p.Z.label;
  if (plan.refs_in_legend) return true;
  for (size_t ri = 0; ri < f.refs.size(); ++ri) {
    const Reference& ref = f.refs[ri];
    if (ref.label.empty()) continue;
    std::vector<std::pair<P, P>> segs;
    for (const auto& L : f.lines)
      for (size_t i = 0; i + 1 < L.pts.size(); ++i) segs.push_back({T.to(L.pts[i]), T.to(L.pts[i + 1])});
    for (size_t rj = 0; rj < f.refs.size(); ++rj) {
      if (rj == ri) continue;
      const Reference& o = f.refs[rj];
      if (o.vertical) segs.push_back({{T.tx(o.value), plot.y}, {T.tx(o.value), plot.y + plot.h}});
      else segs.push_back({{plot.x, T.ty(o.value)}, {plot.x + plot.w, T.ty(o.value)}});
    }
    double asc = r.measure("0", kLabel, false).ascent;
    struct Cand {
      P at;
      Anchor anchor;
    };
    std::vector<Cand> cands;
    double ang = ref.vertical ? M_PI / 2 : 0;
    if (ref.vertical) {
      double x = T.tx(ref.value);
      cands = {{{x - 3, plot.y + 6}, Anchor::Right}, {{x + 3 + asc, plot.y + 6}, Anchor::Right},
               {{x - 3, plot.y + plot.h - 6}, Anchor::Left}, {{x + 3 + asc, plot.y + plot.h - 6}, Anchor::Left}};
    } else {
      double y = T.ty(ref.value);
      for (double fx : {1.0, 0.0, 0.75, 0.25, 0.5, 0.875, 0.125, 0.625, 0.375}) {
        double x = plot.x + 4 + (plot.w - 8) * fx;
        Anchor an = fx == 1.0 ? Anchor::Right : fx == 0.0 ? Anchor::Left : Anchor::Center;
        cands.push_back({{x, y - 3}, an});
        cands.push_back({{x, y + 3 + asc}, an});
      }
    }
    // the first free spot; when none is, the least bad: over lines rather than over markers,
    // over markers rather than over another label, never outside the plot
    size_t pick = 0;
    int best = 1 << 30;
    for (size_t c = 0; c < cands.size() && best > 0; ++c) {
      Quad q = text_quad(r, cands[c].at, ref.label, kLabel, ang, cands[c].anchor, false);
      int bad = q.bounds().inside(p.inner) ? 0 : 1000;
      for (const auto& pl : p.rep.line_labels) bad += quads_overlap(q, pl, 2) ? 100 : 0;
      for (const auto& b2 : p.obs.boxes) bad += quad_overlaps(q, b2, 1) ? 10 : 0;
      if (bad < best && crosses_lines(q, segs)) bad += 1;
      if (bad < best) best = bad, pick = c;
    }
    if (best >= 100) return false;  // over another label (or off the plot): no place for it
    Quad q = text_quad(r, cands[pick].at, ref.label, kLabel, ang, cands[pick].anchor, false);
    if (best > 0) {  // over lines or markers: on a light backing so it stays readable
      Rect hb = q.bounds();
      r.rect(Rect{hb.x - 1, hb.y - 0.5, hb.w + 2, hb.h + 1}, rgb(0xFFFFFF, 0.8), nullptr);
    }
    p.text(cands[pick].at, ref.label, kLabel, ref.style.color, ang, cands[pick].anchor, false);
    p.rep.line_labels.push_back(q);
  }
  return true;
}

// The legend: an inside corner that covers nothing, else beside or under the plot. Returns
// false when no corner was free and the chart must be laid out again with room outside.
bool place_legend(Pass& p, Plan& plan, int pass) {
  const Figure& f = p.f;
  if (f.legend.empty()) return true;
  Renderer& r = p.r;
  const Rect& plot = p.plot;
  const double legend_w = p.legend_w, legend_h = p.legend_h;
  Rect legend_box{0, 0, 0, 0};
  std::vector<Rect> corners = {{plot.x + 6, plot.y + 6, legend_w, legend_h},
                               {plot.x + plot.w - legend_w - 6, plot.y + 6, legend_w, legend_h},
                               {plot.x + plot.w - legend_w - 6, plot.y + plot.h - legend_h - 6, legend_w, legend_h},
                               {plot.x + 6, plot.y + plot.h - legend_h - 6, legend_w, legend_h}};
  // then down the right and left edges (a band of free room between lines, as trends often
  // leave), before the legend moves out of the plot and takes room from it
  const double step = std::max(4.0, p.Z.row / 2);
  for (double y = plot.y + 6 + step; y + legend_h < plot.y + plot.h - 6 - step / 2; y += step)
    for (double x : {plot.x + plot.w - legend_w - 6, plot.x + 6}) corners.push_back({x, y, legend_w, legend_h});
  if (p.legend_below) {
    double w = legend_w * static_cast<double>(p.legend_cols);
    legend_box = Rect{std::max(4.0, std::min(plot.x + plot.w / 2 - w / 2, plan.W - 4 - w)), f.height - legend_h - 4, w, legend_h};
  } else if (plan.legend_outside) {
    legend_box = Rect{plot.x + plot.w + 12 + p.cbar_w, plot.y, legend_w, legend_h};
  } else {
    for (const auto& c : corners) {
      bool on_label = std::any_of(p.rep.line_labels.begin(), p.rep.line_labels.end(), [&](const Quad& q) { return quad_overlaps(q, c, 2); });
      if (!on_label && !p.obs.hit(c, 2)) {
        legend_box = c;
        break;
      }
    }
    if (legend_box.w == 0) {
      if (pass < 3) {
        plan.legend_outside = true;
        return false;
      }
      legend_box = corners[1];
    }
  }
  const Sizes& Z = p.Z;
  LineStyle edge{rgb(0xBBBBBB), 0.6};
  r.rect(legend_box, rgb(0xFFFFFF, 0.92), &edge);
  for (size_t i = 0; i < f.legend.size(); ++i) {
    double col = static_cast<double>(i % p.legend_cols), row = static_cast<double>(i / p.legend_cols);
    double x0 = legend_box.x + col * legend_w;
    double yy = legend_box.y + 2 * Z.u + Z.row * 0.5 + Z.legend * 0.35 + Z.row * row;
    draw_marker_outline_legend(r, {x0 + p.lg_marker, yy - Z.legend * 0.35}, f.legend[i], Z, f.marker_scale);
    p.text({x0 + p.lg_text, yy}, f.legend[i].text, Z.legend, kText, 0, Anchor::Left, false);
  }
  p.rep.legend = legend_box;
  p.obs.boxes.push_back(legend_box);
  return true;
}

// Point labels, greedy: the nearest free spot around the point, farther out with a leader line.
// A number in the key must be drawn: then over lines and markers (never over another label).
// Returns whether a label found no spot (and a numbered key would hold it).
bool place_point_labels(Pass& p, const Plan& plan) {
  Renderer& r = p.r;
  const Figure& f = p.f;
  const double kLabel = p.Z.label;
  bool need_key = false;
  auto gap = [](P m, const Rect& b) { return std::hypot(std::max({b.x - m.x, 0.0, m.x - b.x - b.w}), std::max({b.y - m.y, 0.0, m.y - b.y - b.h})); };
  std::vector<P> markers;
  for (const Point& q : f.points) markers.push_back(p.T.to(q.at));
  for (size_t idx : plan.labelled) {
    const Point& pt = f.points[idx];
    P s = p.T.to(pt.at);
    std::string label = plan.number[idx] > 0 ? std::to_string(plan.number[idx]) : pt.label;
    TextBox tb = r.measure(label, kLabel, false);
    bool placed = false;
    double base = pt.size / 2 + 2;
    const bool must = plan.number[idx] > 0;
    // A number that must be drawn tries, after the near and far spots clear of everything: spots
    // up to 150 pt away clear of markers and labels (over lines, its leader crossing what it
    // must); only then, nearest first, any spot clear of labels (over markers too).
    for (int attempt = 0; attempt < (must ? 4 : 1) && !placed; ++attempt) {
      const bool over_lines = attempt == 2, relaxed = attempt == 3;
      std::vector<double> dists = attempt == 1   ? std::vector<double>{base + 45, base + 65, base + 90}
                                  : over_lines ? std::vector<double>{base, base + 8, base + 18, base + 30, base + 45, base + 65, base + 90, base + 120, base + 150}
                                               : std::vector<double>{base, base + 8, base + 18, base + 30};
      for (double dist : dists) {
        for (int k = 0; k < 8 && !placed; ++k) {
          static const double dirs[8][2] = {{1, 0}, {-1, 0}, {0, -1}, {0, 1}, {1, -1}, {-1, -1}, {1, 1}, {-1, 1}};
          double dx = dirs[k][0], dy = dirs[k][1];
          double bx = dx > 0 ? s.x + dist : dx < 0 ? s.x - dist - tb.width : s.x - tb.width / 2;
          double by = dy < 0 ? s.y - dist - tb.ascent - tb.descent : dy > 0 ? s.y + dist : s.y - (tb.ascent + tb.descent) / 2;
          Rect box{bx, by, tb.width, tb.ascent + tb.descent};
          // a point's own marker is not an obstacle to its label
          Obstacles o;
          o.segments = p.obs.segments;
          o.quads = p.obs.quads;
          for (const auto& b : p.obs.boxes)
            if (!(std::fabs(b.x + b.w / 2 - s.x) < 1e-9 && std::fabs(b.y + b.h / 2 - s.y) < 1e-9)) o.boxes.push_back(b);
          o.boxes.insert(o.boxes.end(), p.rep.point_labels.begin(), p.rep.point_labels.end());
          if (over_lines) o.segments.clear();
          if (relaxed) {
            o = Obstacles{};
            o.boxes = p.rep.point_labels;
            if (p.rep.legend.w > 0) o.boxes.push_back(p.rep.legend);
            o.quads = p.rep.line_labels;
          }
          if (!box.inside(p.inner) || o.hit(box, relaxed || over_lines ? 2.0 : 2.5)) continue;
          // a label without a leader about as near another marker as its own reads as that
          // marker's: not there (a leader says whose it is; a number's last try goes anywhere)
          if (dist <= base && !relaxed) {
            const double own = gap(s, box);
            bool nearer = false;
            for (size_t m = 0; m < markers.size() && !nearer; ++m) nearer = m != idx && gap(markers[m], box) < own + 1.5;  // (clearly nearer its own)
            if (nearer) continue;
          }
          if (dist > base) {  // leader line from the marker's edge to the label, crossing no other label (but for a number that must be drawn)
            P to{std::clamp(s.x, box.x, box.x + box.w), std::clamp(s.y, box.y, box.y + box.h)};
            double len = std::hypot(to.x - s.x, to.y - s.y);
            bool leader_clear = true;
            for (const auto& pl : p.rep.point_labels) leader_clear = leader_clear && !segment_hits(s, to, pl);
            for (const auto& q : p.rep.line_labels) leader_clear = leader_clear && !segment_hits(s, to, q.bounds());
            if (!leader_clear && !relaxed && !over_lines) continue;
            if (len > 0) {
              P from{s.x + (to.x - s.x) / len * pt.size / 2, s.y + (to.y - s.y) / len * pt.size / 2};
              r.polyline({from, to}, LineStyle{rgb(0x888888), 0.6});
              p.obs.segments.push_back({from, to});
            }
          }
          p.text({box.x, box.y + tb.ascent}, label, kLabel, kText, 0, Anchor::Left, false);
          p.rep.point_labels.push_back(box);
          p.rep.point_label_at.push_back(s);
          p.rep.point_label_leader.push_back(dist > base);
          placed = true;
        }
        if (placed) break;
      }
    }
    if (!placed && f.allow_key && plan.number[idx] == 0) need_key = true;
  }
  return need_key;
}

}  // namespace rsim::plots::layout
