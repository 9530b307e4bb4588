// TableWriter and PreviewSink: the tables streamed to their files point by point.
#include "engine/output/output.hpp"
#include "engine/output/output_detail.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <array>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <cstdio>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>

#include <filesystem>
#include <memory>
#include <fstream>
#include <set>
#include <stdexcept>

#include "engine/model/config.hpp"
#include "engine/model/units.hpp"

namespace rsim {

using namespace output_detail;

TableWriter::~TableWriter() {
  try {
    write_pending();  // (what a failed run wrote is removed by the caller)
  } catch (const std::exception&) {
  }
  for (auto& f : files_)
    if (f.fd >= 0) ::close(f.fd);
}

void TableWriter::open(const std::string& name, const std::string& head) {
  File f;
  f.name = name;
  std::string path = (std::filesystem::path(dir_) / name).string();
  f.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (f.fd < 0) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  if (!arena_) arena_.reset(new char[kArena]);
  files_.push_back(std::move(f));
  put(files_.size() - 1, head);
}

// Writes n bytes to a file (all of them: write(2) may take part of them, or be interrupted).
void TableWriter::write_all(const File& f, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(f.fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TableWriter::reserve(File& f, size_t more) {
  if (!f.can_reserve || f.written + more <= f.reserved || f.written < kReserveFrom) return;
  const size_t from = std::max(f.reserved, f.written), len = std::max(kReserveStep, f.written + more - from);
  // (a file system without fallocate, or without the room: the writes themselves allocate, and
  // report a full disk)
  if (::fallocate(f.fd, 0, static_cast<off_t>(from), static_cast<off_t>(len)) != 0) {
    f.can_reserve = false;
    return;
  }
  f.reserved = from + len;
}

void TableWriter::write_pending() {
  std::vector<iovec> iov;
  for (auto& f : files_) {
    if (f.fd < 0) continue;
    size_t bytes = 0;
    for (const Piece& q : f.pending) bytes += q.size;
    reserve(f, bytes);
    f.written += bytes;
    // writev takes at most IOV_MAX pieces and may write part of them
    size_t k = 0;
    while (k < f.pending.size()) {
      iov.clear();
      for (size_t j = k; j < f.pending.size() && iov.size() < IOV_MAX; ++j) iov.push_back({const_cast<char*>(f.pending[j].data), f.pending[j].size});
      const ssize_t w = ::writev(f.fd, iov.data(), static_cast<int>(iov.size()));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        f.pending.clear();
        throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(w < 0 ? errno : ENOSPC));
      }
      size_t left = static_cast<size_t>(w);
      while (left > 0 && left >= f.pending[k].size) left -= f.pending[k++].size;
      if (left > 0) {  // part of a piece: the rest stays
        f.pending[k].data += left;
        f.pending[k].size -= left;
      }
    }
    f.pending.clear();
  }
  arena_used_ = 0;
  pending_ = 0;
}

void TableWriter::flush_all() {
  write_pending();
  std::lock_guard<std::mutex> lock(pool_mu_);
  for (auto& t : held_) pool_.push_back(std::move(t));
  held_.clear();
}

// Queues text for a file: a long piece of a held point text as it lies, anything else copied to
// the arena (a point writes a few small pieces to each file; the kernel copies the lot once)
void TableWriter::put(size_t i, std::string_view text, bool held) {
  if (text.empty()) return;
  File& f = files_[i];
  bytes_ += static_cast<double>(text.size());
  if (held && text.size() >= kHeldPiece) {
    f.pending.push_back({text.data(), text.size()});
  } else {
    if (arena_used_ + text.size() > kArena) write_pending();
    if (text.size() > kArena) {  // (nothing waits now)
      reserve(f, text.size());
      f.written += text.size();
      return write_all(f, text.data(), text.size());
    }
    char* d = arena_.get() + arena_used_;
    std::memcpy(d, text.data(), text.size());
    arena_used_ += text.size();
    if (!f.pending.empty() && f.pending.back().data + f.pending.back().size == d) f.pending.back().size += text.size();
    else f.pending.push_back({d, text.size()});
  }
  pending_ += text.size();
}

void TableWriter::start(const RunHeader& h) {
  header_ = h;
  if (tables_ == Tables::All) open("results.csv", results_csv_header(h));
  open("summary.csv", summary_csv_header(h));
  if (tables_ == Tables::All) open("kernels.csv", kernels_csv_header(h));
  if (tables_ == Tables::All) open("ops.csv", ops_csv_header(h));
  open("results.json", results_json_head(h, info_));
  if (next) next->start(h);
}

namespace {

// A point's text buffer, handed back by consume for the next point that thread prepares when the
// point's text was copied (small points: one worker reuses one buffer, with no lock)
std::string& spare_text() {
  thread_local std::string spare;
  return spare;
}

}  // namespace

void TableWriter::prepare(PointResult& pr, const Point& p) {
  // every piece of the point in one buffer (one allocation at most), cut at text_end
  const bool layers = tables_ == Tables::All;
  std::string& o = pr.text;
  if (o.capacity() < spare_text().capacity()) o.swap(spare_text());
  if (o.capacity() < kHeldPiece) {  // a text written out by consume, if one is back
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      o.swap(pool_.back());
      pool_.pop_back();
    }
  }
  o.clear();
  // room for the point: an estimate, or the last point's size on this thread and an eighth more
  // (the points of a sweep are much alike; a buffer that grows copies what it holds)
  thread_local size_t last = 0;
  o.reserve(std::max(pr.rows.size() * 1500 + pr.summary.size() * (kSummaryCsvBound + kSummaryJsonBound + 256) + 1024, last + last / 8));
  const SummaryTexts* texts = summary_texts(pr);  // each summary row's numbers, formatted once for both files
  thread_local std::vector<char> twin_ok;        // the rows' twin hints, checked once for both files
  if (layers) check_twins(pr.rows, twin_ok);
  if (layers) put_results_csv(o, pr, p, twin_ok);
  pr.text_end[0] = o.size();
  put_summary_csv(o, pr, p, texts);
  pr.text_end[1] = o.size();
  if (layers) append_kernels_csv(o, pr, p);
  pr.text_end[2] = o.size();
  if (layers) append_ops_csv(o, pr, p);
  pr.text_end[3] = o.size();
  append_point_json_head(o, pr, p);
  pr.text_end[4] = o.size();
  put_point_json_tail(o, pr, header_, layers, texts, twin_ok);
  pr.text_end[5] = o.size();
  last = o.size();
  if (next) next->prepare(pr, p);
}

void TableWriter::consume(PointResult&& pr, const Point& p) {
  double before = bytes_;
  // a text with a piece long enough to be written as it lies is held until it is written
  bool hold = false;
  for (size_t k = 0; k < pr.text_end.size(); ++k) hold = hold || pr.text_end[k] - (k ? pr.text_end[k - 1] : 0) >= kHeldPiece;
  if (hold) held_.push_back(std::move(pr.text));
  const std::string& text = hold ? held_.back() : pr.text;
  auto piece = [&](size_t k) { return std::string_view(text).substr(k ? pr.text_end[k - 1] : 0, pr.text_end[k] - (k ? pr.text_end[k - 1] : 0)); };
  size_t k = 0;
  if (tables_ == Tables::All) put(k++, piece(0), hold);
  put(k++, piece(1), hold);
  if (tables_ == Tables::All) put(k++, piece(2), hold);
  if (tables_ == Tables::All) put(k++, piece(3), hold);
  if (points_) put(k, ",");
  put(k, piece(4), hold);
  platforms_.clear();
  platform_refs_.append(platforms_, pr, p);
  put(k, platforms_);
  put(k, piece(5), hold);
  ++points_;
  if (points_ == 1 && on_projection) on_projection(before + (bytes_ - before) * static_cast<double>(header_.points));
  if (!hold) {
    std::string& spare = spare_text();
    if (spare.capacity() < pr.text.capacity()) spare.swap(pr.text);
  }
  std::string().swap(pr.text);
  if (pending_ >= kPending) flush_all();
  if (next) next->consume(std::move(pr), p);
}

std::vector<std::string> TableWriter::finish() {
  if (files_.empty()) start(header_);
  put(files_.size() - 1, results_json_tail());
  std::vector<std::string> names;
  std::string failed;
  std::string error;
  try {
    flush_all();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  for (auto& f : files_) {
    // a file whose room was allocated ahead is cut to what was written
    if (error.empty() && f.reserved > f.written && ::ftruncate(f.fd, static_cast<off_t>(f.written)) != 0)
      error = "cannot write '" + (std::filesystem::path(dir_) / f.name).string() + "': " + std::strerror(errno);
    if (::close(f.fd) != 0 && failed.empty()) failed = f.name;
    f.fd = -1;
    names.push_back(f.name);
  }
  if (!error.empty()) throw std::runtime_error(error);
  if (!failed.empty()) throw std::runtime_error("cannot write '" + (std::filesystem::path(dir_) / failed).string() + "' (disk full?)");
  return names;
}

// ---- PreviewSink

void PreviewSink::start(const RunHeader& h) {
  r_.var_names = h.var_names;
  r_.metric_names = h.metric_names;
}

void PreviewSink::consume(PointResult&& pr, const Point& p) {
  size_t rows = pr.rows.size(), sums = pr.summary.size();
  // a point is kept while it adds rows the tables still show (a summary-only run has no layer
  // rows: its points must not all be kept for the empty layer table)
  if ((rows > 0 && kept_rows_ < max_rows_) || (sums > 0 && kept_summary_ < max_summary_) || r_.results.empty()) {
    kept_rows_ += rows;
    kept_summary_ += sums;
    r_.points.push_back(p);
    r_.results.push_back(std::move(pr));
    r_.results.back().text.clear();
  }
  total_rows_ += rows;
  total_summary_ += sums;
}

}  // namespace rsim
