// Sharded runs: `rsim run SCEN --shard K/N` (a shard's points into its own folder) and
// `rsim merge OUT DIR...` (the shards into the result set an unsharded run writes, byte for byte).
#include "app/cli_common.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "app/result_set.hpp"

namespace fs = std::filesystem;

namespace rsim::cli {

namespace {

bool whole_number(const std::string& t, size_t& v) {
  if (t.empty() || t.size() > 12 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  v = std::stoull(t);
  return true;
}

std::string shard_file(const std::string& dir) {
  return fs::is_directory(dir) ? (fs::path(dir) / "shard.rsim").string() : dir;
}

}  // namespace

bool parse_shard(const std::string& text, ShardRun& shard, std::ostream& err) {
  if (text == "slurm") {
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    size_t i = 0, m = 0, n = 0;
    if (!id || !min || !count || !whole_number(id, i) || !whole_number(min, m) || !whole_number(count, n) || i < m || n == 0 || i - m >= n) {
      usage_error(err, "--shard slurm needs SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT of an array job (sbatch --array=0-N)",
                  "run it inside `sbatch --array`, or give --shard K/N");
      return false;
    }
    shard.k = i - m, shard.n = n;
    return true;
  }
  const size_t slash = text.find('/');
  size_t k = 0, n = 0;
  if (slash == std::string::npos || !whole_number(text.substr(0, slash), k) || !whole_number(text.substr(slash + 1), n)) {
    usage_error(err, "--shard '" + text + "' is not K/N", "--shard 0/4 runs the first of 4 shards (K from 0), or --shard slurm");
    return false;
  }
  if (n == 0 || k >= n) {
    usage_error(err, "--shard " + text + ": K must be below N and N at least 1", "the shards of --shard K/4 are 0/4, 1/4, 2/4 and 3/4");
    return false;
  }
  shard.k = k, shard.n = n;
  return true;
}

std::string shard_suffix(const ShardRun& shard) {
  return shard.n ? "-shard-" + std::to_string(shard.k) + "-of-" + std::to_string(shard.n) : std::string();
}

std::vector<std::string> shard_options(const po::variables_map& vm) {
  std::vector<std::string> o;
  if (vm.count("set"))
    for (const auto& v : vm["set"].as<std::vector<std::string>>()) o.push_back("--set=" + v);
  for (const char* name : {"tables", "format", "style", "hw-dir"})
    if (vm.count(name) && !vm[name].defaulted()) o.push_back(std::string("--") + name + "=" + vm[name].as<std::string>());
  if (vm.count("dpi") && !vm["dpi"].defaulted()) o.push_back("--dpi=" + std::to_string(vm["dpi"].as<double>()));
  if (vm.count("no-plots")) o.push_back("--no-plots");
  return o;
}

int run_shard(const Scenario& s, const Catalog& catalog, RunOptions opt, const ShardRun& shard, const std::vector<std::string>& options,
              const std::string& dir, bool quiet, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ResultSet> set;
  try {
    set = std::make_unique<ResultSet>(dir, [&] { err << "rsim: waiting for another rsim writing into '" << dir << "' to finish\n"; });
    ShardHeader h{RSIM_VERSION, fs::absolute(s.path).lexically_normal().string(), s.path, s.hash, options, shard.k, shard.n,
                  static_cast<size_t>(point_count(s.sweep)), {}, {}};
    ShardWriter w((fs::path(set->staging()) / "shard.rsim").string(), h);
    opt.points = shard_points(s.sweep, shard.k, shard.n);
    const size_t mine = opt.points.size();
    auto t0 = std::chrono::steady_clock::now();
    if (mine > 0) stream_scenario(s, catalog, opt, w);  // (no points: an empty shard, which a merge accepts)
    else w.start(RunHeader{{}, {}, 0});
    w.finish();
    set->commit({"shard.rsim"});
    if (!quiet) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      out << s.name << ": shard " << shard.k << " of " << shard.n << ", " << mine << " of " << h.points << " points (index ≡ " << shard.k << " mod " << shard.n
          << "); wrote " << dir << "/shard.rsim (evaluated in " << buf << "); rsim merge OUT DIR... writes the result set\n";
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  return kOk;
}

void check_merge_scenario(Scenario& s, const MergeRun& m) {
  const ShardHeader& h = m.shards.front()->header();
  if (s.hash != h.hash)
    throw ConfigError(SourceLoc{}, "the scenario '" + h.scenario + "' changed since its shards ran (fnv1a64 " + s.hash + " now, " + h.hash + " then): run the shards again");
  // the tables name the file as the shards' run was given it, when that name reaches it from here
  std::error_code ec;
  if (fs::equivalent(h.given, h.scenario, ec)) s.path = h.given;
}

int cmd_merge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim merge options");
  desc.add_options()("help,h", "show this help")("out", po::value<std::string>(), "the output folder")(
      "shards", po::value<std::vector<std::string>>(), "shard folders (or their shard.rsim files)")(
      "scenario", po::value<std::string>(), "the scenario file (default: where the shards' run read it; its bytes must be the same)")("quiet,q", "print nothing but errors");
  po::positional_options_description pos;
  pos.add("out", 1).add("shards", -1);
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("merge") << "\n\n" << desc;
    return kOk;
  }
  if (!vm.count("out") || !vm.count("shards")) return usage_error(err, "merge needs an output folder and the shards' folders", "rsim merge out/sweep out/sweep-shard-*");
  MergeRun m;
  std::map<size_t, std::string> given;  // k → its folder
  try {
    for (const auto& dir : vm["shards"].as<std::vector<std::string>>()) {
      auto r = std::make_unique<ShardReader>(shard_file(dir));
      const ShardHeader& h = r->header();
      if (!m.shards.empty()) {
        const ShardHeader& f = m.shards.front()->header();
        const std::string first = given.begin()->second;
        auto differ = [&](const std::string& what, const std::string& a, const std::string& b) {
          throw std::runtime_error("shard '" + dir + "' is of another run than '" + first + "': its " + what + ": " + a + ", not " + b);
        };
        auto joined = [](const std::vector<std::string>& v) {
          std::string t;
          for (const auto& x : v) t += (t.empty() ? "" : " ") + x;
          return "'" + t + "'";
        };
        if (h.version != f.version) differ("rsim version", h.version, f.version);
        if (h.hash != f.hash) differ("scenario", h.scenario + " (fnv1a64 " + h.hash + ")", f.scenario + " (fnv1a64 " + f.hash + ")");
        if (h.options != f.options) differ("options", joined(h.options), joined(f.options));
        if (h.n != f.n) differ("shard count", std::to_string(h.n), std::to_string(f.n));
      }
      if (given.count(h.k)) throw std::runtime_error("shard " + std::to_string(h.k) + " of " + std::to_string(h.n) + " is given twice: '" + given[h.k] + "' and '" + dir + "'");
      given[h.k] = dir;
      m.shards.push_back(std::move(r));
    }
    const size_t n = m.shards.front()->header().n;
    for (size_t k = 0; k < n; ++k)
      if (!given.count(k)) throw std::runtime_error("shard " + std::to_string(k) + " of " + std::to_string(n) + " is missing (rsim run ... --shard " + std::to_string(k) + "/" + std::to_string(n) + ")");
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  std::sort(m.shards.begin(), m.shards.end(), [](const auto& a, const auto& b) { return a->header().k < b->header().k; });
  const ShardHeader& h = m.shards.front()->header();
  std::vector<std::string> run = h.options;
  run.insert(run.end(), {vm.count("scenario") ? vm["scenario"].as<std::string>() : h.scenario, "--out", vm["out"].as<std::string>()});
  if (vm.count("quiet")) run.push_back("--quiet");
  return cmd_run(run, out, err, &m);
}

}  // namespace rsim::cli
