#include "serving/workload.hpp"

#include "engine/model/text_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>


namespace rsim::serving {

namespace {

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t mix(uint64_t h, uint64_t v) {  // a hash chain step (splitmix of the pair)
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2));
  return splitmix(x);
}

long long draw_length(const Lengths& l, Rng& rng) {
  double v = l.mean;
  switch (l.dist) {
    case Lengths::Dist::Fixed: break;
    case Lengths::Dist::Uniform:
      v = static_cast<double>(l.min) + std::floor(rng.uniform() * static_cast<double>(l.max - l.min + 1));
      break;
    case Lengths::Dist::Normal: v = rng.normal(l.mean, l.cv * l.mean); break;
    case Lengths::Dist::Lognormal: {
      const double s2 = std::log(1 + l.cv * l.cv);
      v = std::exp(rng.normal(std::log(l.mean) - s2 / 2, std::sqrt(s2)));
      break;
    }
  }
  return std::clamp(static_cast<long long>(std::llround(v)), l.min, l.max);
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix(x);
}

uint64_t Rng::next() {
  const uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0], s_[3] ^= s_[1], s_[1] ^= s_[2], s_[0] ^= s_[3], s_[2] ^= t, s_[3] = rotl(s_[3], 45);
  return r;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::exponential(double mean) { return -mean * std::log1p(-uniform()); }

double Rng::normal(double mean, double sd) {
  if (has_spare_) {
    has_spare_ = false;
    return mean + sd * spare_;
  }
  double u = uniform(), v = uniform();
  while (u <= 0) u = uniform();
  const double r = std::sqrt(-2 * std::log(u)), a = 2 * M_PI * v;
  spare_ = r * std::sin(a), has_spare_ = true;
  return mean + sd * r * std::cos(a);
}

double Rng::gamma(double shape, double scale) {
  if (shape < 1) {  // boost: gamma(k) = gamma(k + 1) · u^(1/k)
    double u = uniform();
    while (u <= 0) u = uniform();
    return gamma(shape + 1, scale) * std::pow(u, 1 / shape);
  }
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = normal(0, 1), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = uniform();
    if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v * scale;
  }
}

std::vector<uint64_t> block_hashes(const std::vector<long long>& ids, long long block_size) {
  std::vector<uint64_t> out;
  if (block_size <= 0) return out;
  uint64_t h = 0xCBF29CE484222325ULL;
  const size_t b = static_cast<size_t>(block_size);
  for (size_t i = 0; i + b <= ids.size(); i += b) {
    for (size_t k = i; k < i + b; ++k) h = mix(h, static_cast<uint64_t>(ids[k]));
    out.push_back(h);
  }
  return out;
}

std::vector<Request> generate(const Synthetic& w, long long block_size) {
  std::vector<Request> out;
  out.reserve(static_cast<size_t>(std::max(0LL, w.requests)));
  Rng rng(w.seed);
  double t = 0;
  const double shape = w.arrivals.cv > 0 ? 1 / (w.arrivals.cv * w.arrivals.cv) : 1;
  for (long long i = 0; i < w.requests; ++i) {
    Request r;
    if (w.concurrency <= 0 && i > 0) {
      switch (w.arrivals.process) {
        case Process::Poisson: t += rng.exponential(1 / w.arrivals.rate); break;
        case Process::Gamma: t += rng.gamma(shape, 1 / (w.arrivals.rate * shape)); break;
        case Process::Constant: t += 1 / w.arrivals.rate; break;
        case Process::Burst: break;
      }
    }
    r.arrival_s = w.concurrency > 0 ? 0 : t;
    const long long prefix = std::max(0LL, w.shared_prefix_tokens);
    r.prompt = prefix + draw_length(w.prompt, rng);
    r.output = draw_length(w.output, rng);
    if (block_size > 0) {  // the shared system prompt's blocks, then blocks of this request's own
      const uint64_t group = prefix > 0 ? rng.next() % static_cast<uint64_t>(std::max(1LL, w.shared_prefix_groups)) : 0;
      uint64_t h = mix(0x5EED, group);
      for (long long b = 0; (b + 1) * block_size <= r.prompt; ++b) {
        const bool shared = (b + 1) * block_size <= prefix;
        h = mix(h, shared ? 0x51A7ED + static_cast<uint64_t>(b) : 0x10000000000ULL * static_cast<uint64_t>(i + 1) + static_cast<uint64_t>(b));
        r.block_hashes.push_back(h);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------- traces

namespace {

// A JSON object of one line, read for the keys a trace uses: numbers, and arrays of numbers
// (anything else is skipped). Enough for JSONL traces; a malformed line throws with its column.
class JsonLine {
 public:
  explicit JsonLine(const std::string& s) : s_(s) {}
  void read(const std::function<void(const std::string&, double, const std::vector<long long>*)>& on) {
    ws();
    expect('{');
    ws();
    if (peek() == '}') return void(++i_);
    for (;;) {
      ws();
      const std::string key = string();
      ws();
      expect(':');
      ws();
      if (peek() == '[') {
        std::vector<long long> v;
        ++i_;
        ws();
        if (peek() == ']') ++i_;
        else
          for (;;) {
            ws();
            v.push_back(static_cast<long long>(number()));
            ws();
            if (peek() == ',') { ++i_; continue; }
            expect(']');
            break;
          }
        on(key, 0, &v);
      } else if (peek() == '"') {
        string();
      } else if (peek() == 'n' || peek() == 't' || peek() == 'f') {
        while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
      } else {
        on(key, number(), nullptr);
      }
      ws();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      return;
    }
  }
  size_t column() const { return i_ + 1; }

 private:
  const std::string& s_;
  size_t i_ = 0;
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    if (peek() != c) throw std::runtime_error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') ++i_;
      if (i_ < s_.size()) out += s_[i_++];
    }
    expect('"');
    return out;
  }
  double number() {
    const char* b = s_.c_str() + i_;
    char* e = nullptr;
    const double v = std::strtod(b, &e);
    if (e == b) throw std::runtime_error("expected a number");
    i_ += static_cast<size_t>(e - b);
    return v;
  }
};

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.push_back(cur), cur.clear();
    else if (c != '\r') cur += c;
  }
  cells.push_back(cur);
  for (auto& c : cells) {
    const size_t a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
    c = a == std::string::npos ? "" : c.substr(a, b - a + 1);
  }
  return cells;
}

// "2023-11-16 18:15:46.6805900" (or a plain number) in seconds; NaN when neither
double timestamp_s(const std::string& t) {
  char* e = nullptr;
  const double v = std::strtod(t.c_str(), &e);
  if (e && *e == '\0' && !t.empty()) return v;
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(t.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return NAN;
  // days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil-from-days, inverted)
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = static_cast<double>(era) * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + sec;
}

}  // namespace

std::vector<Request> read_trace(const std::string& path, long long block_size, const SourceLoc& used) {
  std::string why;
  std::optional<std::string> read = read_text_file(path, size_t(16) << 30, "trace", why);  // gzip'd or not
  if (!read)
    throw ConfigError(used, "cannot read the trace '" + path + "': " + why, {Note{{}, "give a JSONL or CSV file, gzip'd or not (a path relative to the scenario)"}});
  const std::string& text = *read;
  auto file = SourceFile::from_text(path, text);
  auto fail = [&](long long line, size_t col, const std::string& why, const std::string& note = "") {
    throw ConfigError(SourceLoc{file, static_cast<int>(line), static_cast<int>(col)}, why, note.empty() ? std::vector<Note>{} : std::vector<Note>{Note{{}, note}});
  };
  std::vector<Request> out;
  std::istringstream lines(text);
  std::string line;
  long long n = 0;
  enum class Format { Unknown, Jsonl, Csv } format = Format::Unknown;
  int c_arrival = -1, c_prompt = -1, c_output = -1;
  bool azure = false;
  while (std::getline(lines, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (format == Format::Unknown) {
      if (line[line.find_first_not_of(" \t")] == '{') {
        format = Format::Jsonl;
      } else {
        format = Format::Csv;
        const auto head = split_csv(line);
        for (size_t k = 0; k < head.size(); ++k) {
          const std::string& h = head[k];
          if (h == "arrival_s" || h == "TIMESTAMP") c_arrival = static_cast<int>(k), azure = azure || h == "TIMESTAMP";
          if (h == "prompt_tokens" || h == "ContextTokens") c_prompt = static_cast<int>(k);
          if (h == "output_tokens" || h == "GeneratedTokens") c_output = static_cast<int>(k);
        }
        if (c_arrival < 0 || c_prompt < 0 || c_output < 0)
          fail(n, 1, "a trace CSV's header names arrival_s, prompt_tokens and output_tokens (or the Azure trace's TIMESTAMP, ContextTokens, GeneratedTokens)",
               "this header: " + line);
        continue;
      }
    }
    Request r;
    r.line = n;
    double arrival = NAN, prompt = NAN, output = NAN;
    std::vector<long long> ids;
    if (format == Format::Jsonl) {
      JsonLine j(line);
      try {
        j.read([&](const std::string& k, double v, const std::vector<long long>* arr) {
          if (k == "arrival_time_ns" && !arr) arrival = v * 1e-9;
          else if (k == "arrival_s" && !arr) arrival = v;
          else if (k == "input_toks" && !arr) prompt = v;
          else if (k == "output_toks" && !arr) output = v;
          else if (k == "input_tok_ids" && arr) ids = *arr;
        });
      } catch (const std::runtime_error& e) {
        fail(n, j.column(), std::string("this trace line is not a JSON object: ") + e.what());
      }
      if (std::isnan(arrival) || std::isnan(prompt) || std::isnan(output))
        fail(n, 1, "a JSONL trace line needs arrival_time_ns (or arrival_s), input_toks and output_toks");
    } else {
      const auto cells = split_csv(line);
      const int most = std::max({c_arrival, c_prompt, c_output});
      if (static_cast<int>(cells.size()) <= most) fail(n, 1, "this trace row has " + std::to_string(cells.size()) + " cells; the header names " + std::to_string(most + 1));
      arrival = azure ? timestamp_s(cells[static_cast<size_t>(c_arrival)]) : std::strtod(cells[static_cast<size_t>(c_arrival)].c_str(), nullptr);
      char* e1 = nullptr;
      char* e2 = nullptr;
      prompt = std::strtod(cells[static_cast<size_t>(c_prompt)].c_str(), &e1);
      output = std::strtod(cells[static_cast<size_t>(c_output)].c_str(), &e2);
      if (*e1 != '\0' || *e2 != '\0' || cells[static_cast<size_t>(c_prompt)].empty() || cells[static_cast<size_t>(c_output)].empty()) prompt = NAN;
    }
    if (!std::isfinite(arrival) || arrival < 0) fail(n, 1, "the arrival time is not a number of seconds ≥ 0");
    if (!std::isfinite(prompt) || prompt < 1 || prompt != std::floor(prompt) || prompt > 1e9)
      fail(n, 1, "the prompt's token count is not a whole number from 1 to 1e9");
    if (!std::isfinite(output) || output != std::floor(output) || output > 1e9 || output < 1)
      fail(n, 1, "the output's token count is not a whole number from 1 to 1e9", "a request generates at least one token");
    if (!out.empty() && arrival < out.back().arrival_s)
      fail(n, 1, "arrivals must not decrease: this one is before the previous line's", "sort the trace by arrival time");
    r.arrival_s = arrival;
    r.prompt = static_cast<long long>(prompt), r.output = static_cast<long long>(output);
    if (!ids.empty()) r.block_hashes = block_hashes(ids, block_size);
    out.push_back(std::move(r));
  }
  if (out.empty()) throw ConfigError(used, "the trace '" + path + "' holds no requests");
  const double t0 = out.front().arrival_s;
  for (auto& r : out) r.arrival_s -= t0;
  return out;
}

}  // namespace rsim::serving
