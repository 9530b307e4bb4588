// `rsim probe`: this machine's roofs measured (natively, or through rsim_torch on any device).
#include "app/cli_common.hpp"

#include "session/session.hpp"
#include "engine/output/output.hpp"
#include "measure/probe_output.hpp"
#include "measure/probe_figures.hpp"
#include "plots/draw.hpp"
#include "plots/report.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace rsim::cli {

int cmd_probe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("rsim probe options");
  desc.add_options()("help,h", "show this help")("quick", "a shorter run (< 15 s): fewer working sets and samples")(
      "threads", po::value<int>()->default_value(0), "threads for the 'all' figures (default: every online CPU)")(
      "output,o", po::value<std::string>(), "write the platform file (catalog format); its stem is the platform's name")(
      "json", po::value<std::string>(), "write the measurements as JSON")(
      "out", po::value<std::string>(), "folder for the figures probe_roofline and probe_bandwidth (PNG and SVG)")(
      "max-working-set", po::value<std::string>(), "largest working set of the bandwidth sweep (default: 512 MiB, or 4 × the last cache)")(
      "backend", po::value<std::string>()->default_value("native"), "native: this CPU with rsim's own kernels; torch: any device through PyTorch (rsim_torch)")(
      "device", po::value<std::string>()->default_value("cuda:0"), "with --backend torch: cuda[:N], cpu or mps");
  po::positional_options_description pos;
  po::variables_map vm;
  int code = kOk;
  if (!parse(args, desc, pos, vm, err, code)) return code;
  if (vm.count("help")) {
    out << "usage: rsim " << synopsis("probe") << "\n\n" << desc;
    return kOk;
  }
  const std::string backend = vm["backend"].as<std::string>();
  if (backend != "native" && backend != "torch")
    return usage_error(err, "--backend must be native or torch, got '" + backend + "'", did_you_mean(backend, {"native", "torch"}));
  if (backend == "torch") {  // the device through PyTorch: rsim_torch writes the platform file
    std::vector<std::string> a = {"probe", "--device", vm["device"].as<std::string>()};
    if (vm.count("quick")) a.push_back("--quick");
    if (vm.count("output")) a.insert(a.end(), {"-o", vm["output"].as<std::string>()});
    if (vm.count("json")) a.insert(a.end(), {"--json", vm["json"].as<std::string>()});
    return run_rsim_torch(a, err);
  }
  int threads = vm["threads"].as<int>();
  if (threads < 0 || threads > 1024) return usage_error(err, "--threads must be between 1 and 1024");
  measure::ProbeOptions opt;
  opt.quick = vm.count("quick") > 0;
  opt.threads = threads;
  if (vm.count("max-working-set")) {
    std::string v = vm["max-working-set"].as<std::string>();
    auto q = parse_quantity(v, Dim::Bytes).value;
    if (!q || *q < 64 * 1024) return usage_error(err, "--max-working-set must be a size of at least 64 KiB, got '" + v + "'", "e.g. --max-working-set 1GiB");
    // the sweep maps up to twice the working set (copy and triad buffers): beyond half this
    // machine's memory it would page or be killed, not measure DRAM
    const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    if (ram > 0 && 2 * *q > ram / 2) {
      char b[200];
      std::snprintf(b, sizeof b, "--max-working-set %s needs about %.3g GB of buffers; this machine has %.3g GB: at most a quarter of it (%.3g GB) may be swept",
                    v.c_str(), 2 * *q / 1e9, ram / 1e9, ram / 4e9);
      err << "rsim: error: " << b << "\nrsim: note: e.g. --max-working-set 1GiB: DRAM is reached far below that\n";
      return kConfig;
    }
    opt.max_working_set_bytes = *q;
  }
  std::string platform_name;
  if (vm.count("output")) {
    platform_name = fs::path(vm["output"].as<std::string>()).stem().string();
    bool ok = !platform_name.empty() && std::all_of(platform_name.begin(), platform_name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
    if (!ok) return usage_error(err, "the platform file's stem '" + platform_name + "' is its name: use letters, digits, '_' and '-'", "e.g. -o hardware/this_machine.yaml");
  }
  bool tty = isatty(2);
  opt.progress = [&](const std::string& s) {
    if (tty) std::fprintf(stderr, "\rprobe: %-60s", s.c_str());
  };
  measure::ProbeResult r = measure::run_probe(opt);
  if (tty) std::fprintf(stderr, "\r%-70s\r", "");
  std::vector<plots::OutputFile> files;
  // levels that cannot be right (a DRAM plateau at a cache's bandwidth, or inside a cache's sizes):
  // no platform file, the figures say why (the JSON and the figures are still written)
  const std::vector<std::string> mislabels = measure::probe_mislabels(r);
  if (vm.count("output") && mislabels.empty()) files.push_back({vm["output"].as<std::string>(), measure::probe_platform_yaml(r, platform_name)});
  if (vm.count("json")) files.push_back({vm["json"].as<std::string>(), measure::probe_json(r)});
  if (vm.count("out")) {
    fs::path dir = vm["out"].as<std::string>();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      err << "rsim: error: cannot create output folder '" << dir.string() << "': " << ec.message() << "\n";
      return kConfig;
    }
    for (auto& [stem, fig] : measure::probe_figures(r))
      for (plots::Format f : {plots::Format::PNG, plots::Format::SVG})
      {
        plots::CairoRenderer cr(f, 150);
        plots::draw(fig, cr);
        files.push_back({(dir / (stem + "." + plots::format_ext(f))).string(), cr.bytes()});
      }
  }
  try {
    for (const auto& f : files) write_file_atomic(f.name, f.bytes);
  } catch (const std::exception& e) {
    err << "rsim: error: " << e.what() << "\n";
    return kConfig;
  }
  out << measure::probe_report(r);
  for (const auto& f : files) out << "wrote " << f.name << "\n";
  if (!mislabels.empty()) {
    err << "rsim: error: the memory levels of this probe look mislabelled" << (vm.count("output") ? "; " + vm["output"].as<std::string>() + " was not written" : "")
        << ":\n";
    for (const auto& m : mislabels) err << "  " << m << "\n";
    err << "note: probe again on a quieter machine, or with --max-working-set past the last cache\n";
    return kConfig;
  }
  return kOk;
}

}  // namespace rsim::cli
