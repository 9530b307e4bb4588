#include "plots/charts.hpp"

#include "plots/chart_common.hpp"

#include "engine/model/names.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/output/output.hpp"
#include "engine/model/units.hpp"
#include "plots/draw.hpp"

namespace rsim::plots {
using namespace chart;

namespace {

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return o;
}

}  // namespace


namespace {
std::vector<BuiltFigure> build_figures_as_given(const PlotSpec& spec, const RunResult& r, const Scenario& s);

// `subtitle: short` keeps what short_subtitle keeps; `none` drops the line.
std::string subtitle_as(const std::string& mode, const std::string& full) {
  if (mode == "none") return "";
  return mode == "short" ? short_subtitle(full) : full;
}
}

std::vector<BuiltFigure> build_figures(const PlotSpec& given_spec, const RunResult& r, const Scenario& s) {
  std::vector<BuiltFigure> out = build_figures_as_given(resolved(given_spec), r, s);
  apply_style(given_spec, out);
  return out;
}

void apply_style(const PlotSpec& given_spec, std::vector<BuiltFigure>& out) {
  StylePreset st = style_preset(given_spec.style);
  for (BuiltFigure& b : out) {
    b.spec = &given_spec;
    Figure& f = b.figure;
    f.font_size = resolved(given_spec).font_size;
    f.line_scale = st.line_scale;
    f.marker_scale = st.marker_scale;
    f.fixed_size = st.fixed || given_spec.physical;
    if (!st.title && given_spec.title.empty()) f.title.clear();  // a paper figure's title is its caption
    f.subtitle = subtitle_as(given_spec.subtitle, f.subtitle);
  }
}

namespace {

std::vector<BuiltFigure> build_figures_as_given(const PlotSpec& spec, const RunResult& r, const Scenario& s) {
  std::vector<BuiltFigure> out;
  std::vector<std::string> all = platform_names(r);
  // each platform the plot names, with the names it stands for: itself, or for the base name of
  // a what-if entry (its variants are named per point, "x@2.2GHz") every variant (a heatmap reads
  // the base name itself: its cells are the variants)
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (size_t pi = 0; pi < (spec.platforms.empty() ? all.size() : spec.platforms.size()); ++pi) {
    const std::string& p = spec.platforms.empty() ? all[pi] : spec.platforms[pi];
    if (std::find(all.begin(), all.end(), p) != all.end() || (spec.kind == Kind::Heatmap && platform_slot(r, p) != SIZE_MAX)) {
      groups.push_back({p, {p}});
      continue;
    }
    std::vector<std::string> variants;
    if (const size_t slot = platform_slot(r, p); slot != SIZE_MAX)
      for (const auto& a : all)
        if (platform_slot(r, a) == slot) variants.push_back(a);
    if (variants.empty()) {
      std::string hint = did_you_mean(p, all);
      const SourceLoc& at = pi < spec.platform_locs.size() && !spec.platforms.empty() ? spec.platform_locs[pi] : spec.loc;
      throw ConfigError(at, "plot names platform '" + p + "', which this run does not evaluate", {Note{{}, hint.empty() ? "platforms here: " + [&] { std::string t; for (auto& a : all) t += (t.empty() ? "" : ", ") + a; return t; }() : hint}});
    }
    groups.push_back({p, variants});
  }
  std::vector<std::string> plats;
  for (const auto& g : groups) plats.insert(plats.end(), g.second.begin(), g.second.end());
  const std::vector<std::string> nets = network_names(r);
  for (size_t ni = 0; ni < spec.networks.size(); ++ni) {
    const std::string& n = spec.networks[ni];
    if (std::find(nets.begin(), nets.end(), n) == nets.end()) {
      std::string hint = did_you_mean(n, nets), list;
      for (const auto& o : nets) list += (list.empty() ? "" : ", ") + o;
      const SourceLoc& at = ni < spec.network_locs.size() && spec.network_locs[ni].known() ? spec.network_locs[ni] : spec.loc;
      throw ConfigError(at, "plot names network '" + n + "', which this run does not evaluate", {Note{{}, hint.empty() ? "networks here: " + list : hint}});
    }
  }
  if ((spec.kind == Kind::Layers || spec.kind == Kind::Compare) && (spec.point < 0 || static_cast<size_t>(spec.point) >= r.points.size()))
    throw ConfigError(spec.loc, "plot point " + std::to_string(spec.point) + " is out of range: the run has " + std::to_string(r.points.size()) + " points");
  auto named = [&](BuiltFigure b, const std::string& def) {
    const bool several = plats.size() > 1 || (spec.networks.size() > 1 && (spec.kind == Kind::Layers || spec.kind == Kind::Heatmap));
    b.name = sanitize(spec.name.empty() ? def : spec.name + (several && !spec.overlay && spec.kind != Kind::Trend && spec.kind != Kind::Compare ? "_" + def.substr(def.find('_') + 1) : ""));
    b.spec = &spec;
    return b;
  };
  switch (spec.kind) {
    case Kind::Roofline:
      if (spec.overlay || plats.size() == 1) out.push_back(named(roofline(spec, r, s, plats), plats.size() == 1 ? "roofline_" + plats[0] : "roofline"));
      else
        for (const auto& [given_name, names] : groups)  // a what-if's variants on one chart
          out.push_back(named(roofline(spec, r, s, names), "roofline_" + given_name));
      break;
    case Kind::Trend: {
      // more lines than 8 colours and dashes tell apart: one figure per platform when the
      // platforms multiply them; still too many in a plot the scenario asks for: refused
      const std::string stem = "trend_" + spec.y + "_vs_" + spec.x;
      BuiltFigure b = trend(spec, r, s);
      const size_t kMaxSeries = 8;
      if (b.series > kMaxSeries && spec.platforms.empty() && all.size() > 1 && spec.series != "platform") {
        std::vector<BuiltFigure> facets;
        for (const auto& p : all) {
          PlotSpec one = spec;
          one.platforms = {p};
          BuiltFigure fb = trend(one, r, s);
          if (fb.series == 0) continue;
          fb.figure.title += " — " + p;
          fb.name = sanitize((spec.name.empty() ? stem : spec.name) + "_" + p);
          fb.spec = &spec;
          facets.push_back(std::move(fb));
        }
        size_t most = 0;
        for (const auto& fb : facets) most = std::max(most, fb.series);
        if (most <= kMaxSeries || !spec.loc.known()) {
          for (auto& fb : facets) out.push_back(std::move(fb));
          break;
        }
        b.series = most;
      }
      if (b.series > kMaxSeries && spec.loc.known())
        throw ConfigError(spec.loc, "this trend would draw " + std::to_string(b.series) + " lines" + (spec.platforms.empty() && all.size() > 1 ? " on each platform" : "") +
                                        "; a figure tells 8 apart",
                          {Note{{}, "pin a variable (rsim run --set NAME=VALUE, or fewer values), pick `series:` with fewer values, give `network:`, or one platform with `platforms: [NAME]`"}});
      out.push_back(named(std::move(b), stem));
      break;
    }
    case Kind::Layers:
      for (const auto& p : spec.platforms.empty() ? std::vector<std::string>{all.front()} : plats)
        for (size_t ni = 0; ni < std::max<size_t>(1, spec.networks.size()); ++ni) {  // a figure per network named
          PlotSpec one = spec;
          if (spec.networks.size() > 1) one.networks = {spec.networks[ni]};
          out.push_back(named(layers(one, r, s, p), "layers_" + p + (spec.networks.size() > 1 ? "_" + spec.networks[ni] : "")));
        }
      break;
    case Kind::ServingCurve:  // drawn from the serving runs (plots/chart_serving.hpp), once they are served
    case Kind::Timeline:
    case Kind::LatencyCdf:
      if (s.serving.is_null())
        throw ConfigError(spec.loc,
                          std::string("a ") + (spec.kind == Kind::Timeline ? "timeline" : spec.kind == Kind::LatencyCdf ? "latency_cdf" : "serving_curve") +
                              " draws the serving: section's runs; this scenario has none",
                          {Note{{}, "add serving: (docs/serving.md)"}});
      if ((spec.kind == Kind::Timeline || (spec.kind == Kind::LatencyCdf && spec.point >= 0)) &&
          (spec.point < 0 || static_cast<size_t>(spec.point) >= static_cast<size_t>(point_count(s.sweep))))
        throw ConfigError(spec.loc, "plot point " + std::to_string(spec.point) + " is out of range: the run has " + std::to_string(static_cast<size_t>(point_count(s.sweep))) + " points");
      break;
    case Kind::Compare: {  // every platform (or what-if variant) on one figure, a figure per network
      std::vector<std::string> shown;
      for (const auto& n : network_names(r))
        if (shows_network(spec, n)) shown.push_back(n);
      for (const auto& n : shown) {
        PlotSpec one = spec;
        one.networks = {n};
        BuiltFigure b = compare(one, r, s, plats);
        b.name = sanitize((spec.name.empty() ? "compare" : spec.name) + (shown.size() > 1 ? "_" + n : ""));
        b.spec = &spec;
        out.push_back(std::move(b));
      }
      break;
    }
    case Kind::Heatmap:
      for (const auto& p : spec.platforms.empty() ? std::vector<std::string>{r.results.front().platforms.front()->name} : plats) {
        std::string shown = slot_name(r, s, platform_slot(r, p));
        for (size_t ni = 0; ni < std::max<size_t>(1, spec.networks.size()); ++ni) {  // a figure per network named
          PlotSpec one = spec;
          if (spec.networks.size() > 1) one.networks = {spec.networks[ni]};
          BuiltFigure b = heatmap(one, r, s, p);
          if (spec.title.empty()) b.figure.title = b.figure.title.substr(0, b.figure.title.rfind(" — ")) + " — " + shown;
          std::string stem = shown.substr(0, shown.find(" (what-if)"));
          out.push_back(named(std::move(b), "heatmap_" + stem + (spec.networks.size() > 1 ? "_" + spec.networks[ni] : "")));
        }
      }
      if (spec.color_scale == "shared" && out.size() > 1) {  // one range over every heatmap of the entry
        double lo = 1e300, hi = -1e300, lo_pos = 1e300;
        for (const auto& b : out)
          for (const auto& row : b.figure.heatmap->values)
            for (double v : row)
              if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v), lo_pos = v > 0 ? std::min(lo_pos, v) : lo_pos;
        if (hi > lo)
          for (auto& b : out) {
            Heatmap& h = *b.figure.heatmap;
            h.log_colors = lo > 0 && hi / lo_pos > 30;
            h.range_lo = h.log_colors ? lo_pos : lo, h.range_hi = hi;
            b.figure.subtitle += " · colour scale shared by " + std::to_string(out.size()) + " heatmaps";
          }
      }
      break;
  }
  return out;
}

}  // namespace

std::vector<PlotSpec> default_plot_specs(const RunResult& r, const Scenario&) {
  std::vector<PlotSpec> specs;
  std::vector<std::string> plats = platform_names(r);
  PlotSpec roof;
  roof.kind = Kind::Roofline;
  // what-if runs name a platform per point: draw those variants together
  size_t per_point = r.results.front().platforms.size();
  roof.overlay = plats.size() > per_point;
  if (roof.overlay) roof.name = "roofline";
  specs.push_back(roof);
  auto value_of = [&](size_t pi, const std::string& name) {
    const std::string* v = env_find(r.points[pi].bindings, name);
    return v ? *v : std::string();
  };
  for (const auto& v : r.var_names) {
    PlotSpec t;
    t.kind = Kind::Trend;
    t.x = v;
    t.y = "intensity";
    // A value of v at several points (a grid of v and other variables) would join points of
    // different settings into one zig-zag line: one line per value of another variable that tells
    // them apart (at most 12 lines), or no default trend over v.
    std::set<std::string> xs;
    bool repeats = false;
    for (size_t pi = 0; pi < r.points.size() && !repeats; ++pi) repeats = !xs.insert(value_of(pi, v)).second;
    if (repeats) {
      std::string by;
      for (const auto& u : r.var_names) {
        if (!by.empty()) break;
        if (u == v) continue;
        std::set<std::pair<std::string, std::string>> pairs;
        std::set<std::string> values;
        bool apart = true;
        for (size_t pi = 0; pi < r.points.size() && apart; ++pi) {
          apart = pairs.emplace(value_of(pi, v), value_of(pi, u)).second;
          values.insert(value_of(pi, u));
        }
        if (apart && values.size() <= 12) by = u;
      }
      if (by.empty()) continue;
      t.series = by;
    }
    specs.push_back(t);
    if (plats.size() > per_point || r.results.front().rows.size() > r.results.front().summary.size()) {
      PlotSpec tt = t;
      tt.y = "derated_time_s";
      specs.push_back(tt);
    }
  }
  if (r.var_names.empty()) {
    PlotSpec t;
    t.kind = Kind::Trend;
    t.x = "layer";
    t.y = "intensity";
    specs.push_back(t);
    PlotSpec l;
    l.kind = Kind::Layers;
    specs.push_back(l);
  }
  return specs;
}

StylePreset style_preset(const std::string& style) {
  const double mm = 72 / 25.4;
  if (style == "paper") return {88 * mm, 66 * mm, 8, 0.75, 0.8, 300, true, false};
  if (style == "paper-wide") return {180 * mm, 80 * mm, 8, 0.75, 0.8, 300, true, false};
  if (style == "slides") return {720, 405, 14, 1.5, 1.5, 150, true, true};
  return {648, 432, 9, 1, 1, 150, false, true};
}

namespace {


// A length: "88 mm", "3.5 in", "2.5 cm", "250 pt", "1600 px" (pixels of the PNG at the plot's dpi),
// or a plain number of points. Returns points; `physical` says whether it was a printed length.
std::optional<double> parse_length(const CNode& v, const std::string& key, double dpi, bool& physical, Diags& d) {
  auto t = to_string(v, d, key);
  if (!t) return std::nullopt;
  std::string s = *t;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-')) ++i;
  auto num = parse_double(s.substr(0, i));
  std::string unit = s.substr(i);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::vector<std::string> units = {"mm", "cm", "in", "pt", "px"};
  if (!num || (!unit.empty() && std::find(units.begin(), units.end(), unit) == units.end())) {
    std::string hint = unit.empty() ? "" : did_you_mean(unit, units);
    d.error(v.loc, key + " must be a length such as '88 mm', '3.5 in' or '1600 px', got '" + s + "'", {Note{{}, hint.empty() ? "units: mm, cm, in, pt, px" : hint}});
    return std::nullopt;
  }
  double pts = *num;
  physical = unit != "px" && !unit.empty();
  if (unit == "mm") pts = *num * 72 / 25.4;
  else if (unit == "cm") pts = *num * 72 / 2.54;
  else if (unit == "in") pts = *num * 72;
  else if (unit == "px") pts = *num * 72 / dpi;
  if (pts < 72 || pts > 6000) {
    d.error(v.loc, key + " must be between 1 in (25.4 mm, 72 pt) and 6000 pt, got '" + s + "'");
    return std::nullopt;
  }
  return pts;
}

// style, width, height, font_size, dpi: in a plot or in `settings.figures`
void read_style_keys(MapReader& m, PlotSpec& p, Diags& d) {
  if (const CNode* v = m.get("style")) {
    static const std::vector<std::string> styles = {"screen", "paper", "paper-wide", "slides"};
    auto t = to_string(*v, d, "style");
    if (t && std::find(styles.begin(), styles.end(), *t) == styles.end()) {
      std::string hint = did_you_mean(*t, styles);
      d.error(v->loc, "style cannot be '" + *t + "'", {Note{{}, hint.empty() ? "choose one of: screen, paper, paper-wide, slides" : hint}});
    } else if (t) {
      p.style = *t;
      p.given.push_back("style");
    }
  }
  if (const CNode* v = m.get("dpi")) {
    auto x = to_number(*v, d, "dpi");
    if (x && (*x < 36 || *x > 600)) d.error(v->loc, "dpi must be between 36 and 600");
    else if (x) p.dpi = *x, p.given.push_back("dpi");
  }
  double dpi = given(p, "dpi") ? p.dpi : style_preset(p.style).dpi;
  for (auto [key, dst] : {std::pair<const char*, double*>{"width", &p.width}, {"height", &p.height}})
    if (const CNode* v = m.get(key)) {
      bool phys = false;
      if (auto x = parse_length(*v, key, dpi, phys, d)) {
        *dst = *x;
        p.given.push_back(key);
        p.physical = p.physical || phys;
      }
    }
  if (const CNode* v = m.get("font_size")) {
    auto t = to_string(*v, d, "font_size");
    std::string s = t.value_or("");
    if (s.size() > 2 && s.substr(s.size() - 2) == "pt") s = s.substr(0, s.size() - 2);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    auto x = parse_double(s);
    if (t && (!x || *x < 6 || *x > 40)) d.error(v->loc, "font_size must be between 6 pt and 40 pt, e.g. '8 pt', got '" + *t + "'");
    else if (x) p.font_size = *x, p.given.push_back("font_size");
  }
}

}  // namespace

PlotSpec resolved(const PlotSpec& spec) {
  PlotSpec p = spec;
  StylePreset st = style_preset(p.style);
  if (!given(p, "width")) p.width = st.width;
  if (!given(p, "height")) p.height = st.height;
  if (!given(p, "font_size")) p.font_size = st.font_size;
  if (!given(p, "dpi")) p.dpi = st.dpi;
  return p;
}

void apply_figure_defaults(std::vector<PlotSpec>& specs, const CNode& settings, Diags& d) {
  const CNode* fig = settings.is_map() ? settings.find("figures") : nullptr;
  if (!fig) return;
  PlotSpec def;
  MapReader m(*fig, keys::map("figures"), "settings.figures", d);
  if (!m.ok()) return;
  read_style_keys(m, def, d);
  m.finish();
  for (PlotSpec& p : specs) {
    for (const std::string& key : def.given) {
      if (given(p, key)) continue;
      if (key == "style") p.style = def.style;
      if (key == "width") p.width = def.width;
      if (key == "height") p.height = def.height;
      if (key == "font_size") p.font_size = def.font_size;
      if (key == "dpi") p.dpi = def.dpi;
      p.given.push_back(key);
    }
    p.physical = p.physical || def.physical;
  }
}

namespace {

// A plot entry's keys read against its kind's key table (engine/model/keys.cpp): a text from a set of
// choices, a [lo, hi] range, a sweep variable
struct PlotReader {
  MapReader& m;
  Diags& d;
  const CNode& item;
  const std::string& kind;
  const std::vector<std::string>& sweep_vars;
  // the choices of a key, from the plot kind's key table, as `rsim schema` lists them
  std::vector<std::string> table_choices(const char* key) const { return keys::map("plot." + kind).find(key)->type.choices; }
  void str(const char* key, std::string& dst, std::vector<std::string> choices = {}) {
    if (const CNode* v = m.get(key)) {
      auto t = to_string(*v, d, key);
      if (!t) return;
      if (!choices.empty() && std::find(choices.begin(), choices.end(), *t) == choices.end()) {
        std::string hint = did_you_mean(*t, choices), all;
        for (const auto& c : choices) all += (all.empty() ? "" : ", ") + c;
        d.error(v->loc, std::string(key) + " cannot be '" + *t + "'", {Note{{}, hint.empty() ? "choose one of: " + all : hint}});
        return;
      }
      dst = *t;
    }
  }
  // [lo, hi] with lo < hi (and lo > 0 on a log axis, checked where the axis is known)
  void range(const char* key, std::vector<double>& dst) {
    const CNode* v = m.get(key);
    if (!v) return;
    std::vector<double> got;
    if (v->is_seq())
      for (const auto& i : v->items)
        if (auto x = to_number(i, d, key)) got.push_back(*x);
    if (got.size() != 2 || !(got[0] < got[1]) || !std::isfinite(got[0]) || !std::isfinite(got[1])) {
      if (got.size() == v->items.size() || !v->is_seq())
        d.error(v->loc, std::string(key) + " must be [lo, hi] with lo < hi", {Note{{}, std::string("e.g. ") + key + ": [0.1, 1000]"}});
      return;
    }
    dst = got;
  }
  void check_var(const char* key, const std::string& v, const std::vector<std::string>& extra) {
    std::vector<std::string> ok = sweep_vars;
    ok.insert(ok.end(), extra.begin(), extra.end());
    if (std::find(ok.begin(), ok.end(), v) == ok.end()) {
      std::string hint = did_you_mean(v, ok), all;
      for (const auto& c : ok) all += (all.empty() ? "" : ", ") + c;
      d.error(item.find(key) ? item.find(key)->loc : item.loc, std::string(key) + " '" + v + "' is not a sweep variable" + (extra.empty() ? "" : " or a layer attribute"),
              {Note{{}, hint.empty() ? (all.empty() ? "this scenario sweeps nothing" : "choose one of: " + all) : hint}});
    }
  }
};

// The keys every plot takes: name (the figure's files), title, networks, platforms, formats, style, subtitle
void read_plot_common(PlotReader& pr, PlotSpec& p, const std::vector<PlotSpec>& specs) {
  MapReader& m = pr.m;
  Diags& d = pr.d;
  const CNode& item = pr.item;
  pr.str("name", p.name);
  if (!p.name.empty()) {
    const CNode* nn = item.find("name");
    bool chars = std::all_of(p.name.begin(), p.name.end(),
                             [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
    if (!chars || p.name.find_first_not_of('.') == std::string::npos)
      d.error(nn->loc, "plot name '" + printable(p.name) + "' names the figure's files: use letters, digits, '-', '_' and '.'");
    else if (p.name == "results" || p.name == "summary" || p.name == "report")
      d.error(nn->loc, "plot name '" + p.name + "' would overwrite the run's " + (p.name == "report" ? "report.md" : p.name + ".csv") + "; pick another");
    else
      for (const PlotSpec& o : specs)
        if (o.name == p.name) d.error(nn->loc, "two plots are named '" + p.name + "': their files would overwrite each other", {Note{o.loc, "the other plot"}});
  }
  pr.str("title", p.title);
  if (const CNode* v = m.get("network")) {  // a name or a list of names
    for (const CNode* i : as_list(*v))
      if (auto t = to_string(*i, d, "network")) p.networks.push_back(*t), p.network_locs.push_back(i->loc);
  }
  if (const CNode* v = m.get("platforms")) {
    for (const CNode* i : as_list(*v))
      if (auto t = to_string(*i, d, "platform")) p.platforms.push_back(*t), p.platform_locs.push_back(i->loc);
  }
  if (const CNode* v = m.get("formats")) {
    for (const CNode* i : as_list(*v)) {
      auto t = to_string(*i, d, "format");
      if (!t) continue;
      if (*t == "png") p.formats.push_back(Format::PNG);
      else if (*t == "svg") p.formats.push_back(Format::SVG);
      else if (*t == "pdf") p.formats.push_back(Format::PDF);
      else d.error(i->loc, "unknown format '" + *t + "'", {Note{{}, "formats: png, svg, pdf"}});
    }
  }
  read_style_keys(m, p, d);
  pr.str("subtitle", p.subtitle, {"full", "short", "none"});
}

// A plot kind's own keys
void read_plot_kind(PlotReader& pr, PlotSpec& p) {
  MapReader& m = pr.m;
  Diags& d = pr.d;
  const CNode& item = pr.item;
  const std::vector<std::string>& sweep_vars = pr.sweep_vars;
  std::vector<std::string> cols = plottable_columns();
  switch (p.kind) {
    case Kind::Roofline:
      pr.str("points", p.points, pr.table_choices("points"));
      pr.str("color", p.color, pr.table_choices("color"));
      if (item.find("color")) p.given.push_back("color");
      pr.str("marker", p.marker, pr.table_choices("marker"));
      pr.str("labels", p.labels, pr.table_choices("labels"));
      pr.str("roofs", p.roofs, pr.table_choices("roofs"));
      pr.str("intensity", p.intensity, pr.table_choices("intensity"));
      if (const CNode* v = m.get("overlay")) p.overlay = to_bool(*v, d, "overlay").value_or(false);
      pr.range("xlim", p.xlim);
      pr.range("ylim", p.ylim);
      for (const auto* lim : {&p.xlim, &p.ylim})
        if (!lim->empty() && lim->front() <= 0)
          d.error(item.find(lim == &p.xlim ? "xlim" : "ylim")->loc, std::string(lim == &p.xlim ? "xlim" : "ylim") + " must be positive: a roofline's axes are logarithmic");
      break;
    case Kind::Trend:
      if (m.require("x")) {
        pr.str("x", p.x);
        pr.check_var("x", p.x, {"layer", "output_size", "out_channels"});
      }
      pr.str("y", p.y, cols);
      {
        std::vector<std::string> choices = {"auto", "platform", "network", "layer"};
        choices.insert(choices.end(), sweep_vars.begin(), sweep_vars.end());
        pr.str("series", p.series, choices);  // a sweep variable: one line per value
      }
      pr.str("layer", p.layer);
      pr.str("op", p.op);
      pr.str("xscale", p.xscale, pr.table_choices("xscale"));
      pr.str("yscale", p.yscale, pr.table_choices("yscale"));
      if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
      pr.range("xlim", p.xlim);
      pr.range("ylim", p.ylim);
      break;
    case Kind::Layers:
      pr.str("metric", p.metric, pr.table_choices("metric"));
      pr.str("xscale", p.xscale, pr.table_choices("xscale"));
      if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
      break;
    case Kind::Timeline:
      p.y = "requests";
      pr.str("y", p.y, pr.table_choices("y"));
      if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
      break;
    case Kind::LatencyCdf:
      p.y = "ttft", p.point = -1;
      pr.str("y", p.y, pr.table_choices("y"));
      pr.str("xscale", p.xscale, pr.table_choices("xscale"));
      if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
      break;
    case Kind::ServingCurve:
      p.y = "ttft_p99_s";
      if (m.require("x")) {
        pr.str("x", p.x);
        pr.check_var("x", p.x, {});
      }
      pr.str("y", p.y, pr.table_choices("y"));
      pr.str("xscale", p.xscale, pr.table_choices("xscale"));
      pr.str("yscale", p.yscale, pr.table_choices("yscale"));
      break;
    case Kind::Compare:
      if (const CNode* v = m.get("baseline")) p.baseline = to_string(*v, d, "baseline").value_or(""), p.baseline_loc = v->loc;
      if (const CNode* v = m.get("point")) p.point = to_integer(*v, d, "point").value_or(0);
      p.roofs = "derated";
      pr.str("roofs", p.roofs, pr.table_choices("roofs"));
      break;
    case Kind::Heatmap:
      if (m.require("x")) {
        pr.str("x", p.x);
        pr.check_var("x", p.x, {});
      }
      if (m.require("y")) {
        pr.str("y", p.layer);
        pr.check_var("y", p.layer, {});
      }
      pr.str("value", p.value, cols);
      if (const CNode* v = item.find("color_scale")) {
        if (v->is_seq()) {
          pr.range("color_scale", p.color_range);
          if (!p.color_range.empty()) p.color_scale = "range";
        } else {
          pr.str("color_scale", p.color_scale, {"auto", "shared"});
        }
        m.get("color_scale");
      }
      break;
  }
}

}  // namespace

std::vector<PlotSpec> parse_plot_specs(const CNode& node, const std::vector<std::string>& sweep_vars, Diags& d) {
  std::vector<PlotSpec> specs;
  if (!node.is_seq()) {
    d.error(node.loc, "plots must be a list of charts (kind: roofline, trend, layers, heatmap or compare)");
    return specs;
  }
  for (const CNode& item : node.items) {
    PlotSpec p;
    p.loc = item.loc;
    MapReader m(item, keys::map("plot.roofline"), "plot", d);
    if (!m.ok()) continue;
    std::string kind;
    if (const CNode* k = m.require("kind")) kind = to_string(*k, d, "kind").value_or("");
    const std::vector<std::string>& kinds = keys::plot_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) m.use(keys::map("plot." + kind));
    if (kind == "roofline") p.kind = Kind::Roofline;
    else if (kind == "trend") p.kind = Kind::Trend;
    else if (kind == "layers") p.kind = Kind::Layers;
    else if (kind == "heatmap") p.kind = Kind::Heatmap;
    else if (kind == "compare") p.kind = Kind::Compare;
    else if (kind == "serving_curve") p.kind = Kind::ServingCurve;
    else if (kind == "timeline") p.kind = Kind::Timeline;
    else if (kind == "latency_cdf") p.kind = Kind::LatencyCdf;
    else if (!kind.empty()) {
      std::string hint = did_you_mean(kind, kinds), all;
      for (const std::string& k : kinds) all += (all.empty() ? "" : ", ") + k;
      d.error(item.find("kind")->loc, "unknown plot kind '" + kind + "'", {Note{{}, hint.empty() ? "kinds: " + all : hint}});
      continue;
    } else {
      continue;  // no kind (m.require reported it): nothing more can be checked against a kind's keys
    }
    PlotReader pr{m, d, item, kind, sweep_vars};
    read_plot_common(pr, p, specs);
    read_plot_kind(pr, p);
    m.finish();
    specs.push_back(p);
  }
  return specs;
}

}  // namespace rsim::plots
