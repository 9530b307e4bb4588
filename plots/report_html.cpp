// report.html: one self-contained page (no network: the figures as inline SVG, a small script of
// our own) whose figures answer a pointer with each point's and bar's tooltip and whose tables sort.
#include "plots/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/model/units.hpp"
#include "engine/output/output.hpp"
#include "plots/svg_writer.hpp"
#include "serving/serve.hpp"

namespace rsim::plots {

namespace {

std::string esc(const std::string& s) { return xml_escape(s); }


std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// A table cell: what a reader sees, and the value it sorts by
std::string td(const std::string& shown, const std::string& sort_key = "") {
  return "<td" + (sort_key.empty() ? std::string() : " data-v=\"" + esc(sort_key) + "\"") + ">" + esc(shown) + "</td>";
}
std::string td_si(double v, const char* unit) { return td(si(v, unit, 4), num(v)); }

// One CSV line into fields (rsim's own tables: quotes around fields with commas or quotes)
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') f.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else f.back() += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') f.emplace_back();
    else f.back() += c;
  }
  return f;
}

// A CSV table as a sortable HTML table, its first `most` rows
std::string csv_table(const std::string& csv, size_t most) {
  std::string html = "<table class=\"sortable\"><thead><tr>";
  size_t at = 0, row = 0, rows = 0;
  std::string body;
  while (at < csv.size()) {
    size_t end = csv.find('\n', at);
    if (end == std::string::npos) end = csv.size();
    const std::string line = csv.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = csv_fields(line);
    if (row++ == 0) {
      for (const auto& h : f) html += "<th>" + esc(h) + "</th>";
      continue;
    }
    if (++rows > most) continue;
    body += "<tr>";
    for (const auto& v : f) body += td(v);
    body += "</tr>\n";
  }
  html += "</tr></thead><tbody>\n" + body + "</tbody></table>\n";
  if (rows > most) html += "<p class=\"note\">The first " + std::to_string(most) + " of " + std::to_string(rows) + " rows.</p>\n";
  return html;
}

// A figure's SVG inlined: no XML declaration, its clip paths' ids made its own
std::string inline_svg(std::string svg, size_t k) {
  if (svg.rfind("<?xml", 0) == 0) svg.erase(0, svg.find('\n') + 1);
  const std::string prefix = "f" + std::to_string(k) + "-";
  for (const char* key : {"id=\"clip", "url(#clip"}) {
    const std::string from = key, to = from.substr(0, from.size() - 4) + prefix + "clip";
    for (size_t p = svg.find(from); p != std::string::npos; p = svg.find(from, p + to.size())) svg.replace(p, from.size(), to);
  }
  return svg;
}

const char* kStyle = R"(body{font-family:"DejaVu Sans",Verdana,sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#222;font-size:14px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;user-select:none}th[data-sort=asc]::after{content:" \25B2"}th[data-sort=desc]::after{content:" \25BC"}
td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}.wide{overflow-x:auto}figure{margin:16px 0}figure svg{max-width:100%;height:auto}
figcaption{font-size:12px;color:#555}.tip:hover,.tip.hot{stroke:#000;stroke-width:1.6}.note{color:#555;font-size:12px}
#tip{position:absolute;display:none;background:#fffff4;border:1px solid #888;padding:4px 7px;font-size:12px;white-space:pre-line;pointer-events:none;
box-shadow:1px 1px 4px rgba(0,0,0,.25);max-width:460px;z-index:10}
)";

// The page's script: tooltips, sorting, and (#selftest) a check of both that a headless browser reads back
const char* kScript = R"((function(){
var errors=[];
function note(){document.body.setAttribute('data-errors',errors.join(' | '));}
window.addEventListener('error',function(e){errors.push(String(e.message));note();});
var tip=document.getElementById('tip');
function place(x,y){var w=tip.offsetWidth,h=tip.offsetHeight,px=x+14,py=y+14;
if(px+w>window.innerWidth-4)px=Math.max(4,x-w-14);if(py+h>window.innerHeight-4)py=Math.max(4,y-h-14);
tip.style.left=(px+window.scrollX)+'px';tip.style.top=(py+window.scrollY)+'px';}
function show(el,x,y){tip.textContent=el.getAttribute('data-tip');tip.style.display='block';el.classList.add('hot');place(x,y);}
function hide(el){tip.style.display='none';el.classList.remove('hot');}
var tips=document.querySelectorAll('[data-tip]');
Array.prototype.forEach.call(tips,function(el){
el.addEventListener('mouseenter',function(e){show(el,e.clientX,e.clientY);});
el.addEventListener('mousemove',function(e){place(e.clientX,e.clientY);});
el.addEventListener('mouseleave',function(){hide(el);});});
function key(td){var v=td.getAttribute('data-v');if(v===null)v=td.textContent;var t=v.trim();
return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)?parseFloat(t):t.toLowerCase();}
function sortBy(th,asc){var table=th.closest('table'),idx=Array.prototype.indexOf.call(th.parentNode.children,th);
Array.prototype.forEach.call(table.querySelectorAll('th'),function(h){h.removeAttribute('data-sort');});
th.setAttribute('data-sort',asc?'asc':'desc');var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var x=key(a.cells[idx]),y=key(b.cells[idx]);
var c=(typeof x==='number'&&typeof y==='number')?x-y:(typeof x==='number'?-1:(typeof y==='number'?1:(x<y?-1:x>y?1:0)));return asc?c:-c;});
rows.forEach(function(r){body.appendChild(r);});}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable th'),function(th){
th.addEventListener('click',function(){sortBy(th,th.getAttribute('data-sort')!=='asc');});});
if(location.hash==='#selftest'){
var shown=0,bad=[],figs={};
Array.prototype.forEach.call(tips,function(el){var r=el.getBoundingClientRect(),fig=el.closest('figure');
var name=fig?fig.getAttribute('data-name'):'';figs[name]=(figs[name]||0)+1;
el.dispatchEvent(new MouseEvent('mouseenter',{clientX:r.left+r.width/2,clientY:r.top+r.height/2}));
if(tip.style.display==='block'&&tip.textContent===el.getAttribute('data-tip')&&tip.textContent.length>0)++shown;else bad.push(el.getAttribute('data-tip'));
el.dispatchEvent(new MouseEvent('mouseleave',{}));});
var sorted=0,unsorted=[];
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(t,ti){
var ths=t.tHead.rows[0].cells;for(var i=0;i<ths.length;++i){sortBy(ths[i],true);
var rows=t.tBodies[0].rows,ok=true;for(var j=1;j<rows.length;++j){var a=key(rows[j-1].cells[i]),b=key(rows[j].cells[i]);
if(typeof a===typeof b&&a>b)ok=false;}if(ok)++sorted;else unsorted.push(ti+':'+i);}});
document.body.setAttribute('data-selftest',JSON.stringify({tips:tips.length,shown:shown,bad:bad.slice(0,5),figures:figs,sorted:sorted,unsorted:unsorted}));}
})();
)";

}  // namespace

std::string report_html(const RunResult& r, const Scenario& s, const std::vector<std::pair<std::string, std::string>>& svgs,
                        const serving::ServingTables* serving) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + esc(s.name) + " · rsim</title>\n<style>" + kStyle +
                  "</style></head><body>\n<h1>" + esc(s.name) + "</h1>\n";
  if (!s.description.empty()) h += "<p>" + esc(s.description) + "</p>\n";
  h += "<p class=\"note\">Generated by rsim " + esc(RSIM_VERSION) + " from <code>" + esc(s.path) + "</code> (fnv1a64 " + esc(s.hash) +
       "). Point at a marker or a bar for what it is; click a column's title to sort by it. report.md says how the numbers are formed.</p>\n";
  // the network totals: every point's, every platform's
  h += "<h2>Network totals</h2>\n<div class=\"wide\"><table class=\"sortable\" id=\"summary\"><thead><tr><th>platform</th><th>network</th>";
  for (const auto& v : r.var_names) h += "<th>" + esc(v) + "</th>";
  h += "<th>FLOPs</th><th>bytes</th><th>FLOP/B</th><th>time</th><th>derated time</th><th>work</th><th>overhead</th><th>comm</th><th>limit</th>"
       "<th>memory-bound layers</th><th>compute-bound layers</th></tr></thead><tbody>\n";
  size_t shown = 0, total = 0;
  for (size_t pi = 0; pi < r.results.size(); ++pi)
    for (const auto& sm : r.results[pi].summary) {
      if (++total > 2000) continue;
      ++shown;
      h += "<tr>" + td(sm.platform) + td(sm.network);
      for (const auto& [k, v] : r.points[pi].bindings) h += td(v);
      char inten[32];
      std::snprintf(inten, sizeof inten, "%.3g", sm.intensity);
      h += td_si(sm.flops, "") + td_si(sm.bytes, "B") + td(inten, num(sm.intensity)) + td_si(sm.time_s, "s") + td_si(sm.derated_time_s, "s") +
           td_si(sm.dparts.work(), "s") + td_si(sm.dparts.overhead(), "s") + td_si(sm.dparts.comm, "s") + td(limit_text(sm)) +
           td(std::to_string(sm.derated_memory_bound)) + td(std::to_string(sm.derated_compute_bound)) + "</tr>\n";
    }
  h += "</tbody></table></div>\n";
  if (total > shown) h += "<p class=\"note\">The first " + std::to_string(shown) + " of " + std::to_string(total) + " rows (every one in summary.csv).</p>\n";
  if (const std::string notes = limit_notes(r, 20); !notes.empty()) h += "<p><b>What limits it.</b></p><pre>" + esc(notes) + "</pre>\n";
  // where the time goes: per op type at the first point
  h += "<h2>Per op type</h2>\n<p class=\"note\">Each op type's share of its network's derated time" +
       std::string(r.points.size() > 1 ? " at the first point (every point in ops.csv)" : "") + ".</p>\n<div class=\"wide\"><table class=\"sortable\" id=\"ops\">"
       "<thead><tr><th>platform</th><th>network</th><th>op</th><th>layers</th><th>kernels</th><th>FLOPs</th><th>bytes</th><th>time</th><th>derated time</th>"
       "<th>share</th></tr></thead><tbody>\n";
  const PointResult& first = r.results.front();
  for (const auto& sm : first.summary)
    for (const OpTotal& o : op_totals(first, sm.platform, sm.network)) {
      char share[32];
      std::snprintf(share, sizeof share, "%.1f %%", 100 * o.share);
      h += "<tr>" + td(sm.platform) + td(sm.network) + td(o.op) + td(num(o.layers)) + td(num(o.kernels)) + td_si(o.flops, "") + td_si(o.bytes, "B") +
           td_si(o.time_s, "s") + td_si(o.derated_time_s, "s") + td(share, num(o.share)) + "</tr>\n";
    }
  h += "</tbody></table></div>\n";
  if (serving && !serving->serving_csv.empty())
    h += "<h2>Serving</h2>\n<p class=\"note\">One row per served run (serving.csv; each request in requests.csv).</p>\n<div class=\"wide\">" +
         csv_table(serving->serving_csv, 500) + "</div>\n";
  h += "<h2>Figures</h2>\n";
  for (size_t k = 0; k < svgs.size(); ++k)
    h += "<figure data-name=\"" + esc(svgs[k].first) + "\">" + inline_svg(svgs[k].second, k) + "<figcaption>" + esc(svgs[k].first) + " · data: <a href=\"" +
         esc(svgs[k].first) + ".csv\">" + esc(svgs[k].first) + ".csv</a></figcaption></figure>\n";
  h += "<div id=\"tip\"></div>\n<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return h;
}

}  // namespace rsim::plots
