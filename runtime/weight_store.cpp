#include "runtime/weight_store.h"

#include <minirt/error.h>

#include "runtime/format_bytes.h"
#include "runtime/host_resources.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace minirt {

namespace {

size_t page_size() {
  static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + static_cast<int64_t>(st.st_mtim.tv_nsec);
}

[[noreturn]] void fail_file(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::kNotFound, path + ": " + msg);
}

}  // namespace

// ---- MappedFile ----

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail_file(path, "is a directory, not a model file");
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->fd_ < 0) fail_file(path, std::string("cannot open the file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f->fd_, &st) == 0 && S_ISREG(st.st_mode)) {
    f->size_ = static_cast<size_t>(st.st_size);
    f->mtime_ns_ = mtime_ns(st);
    if (f->size_ == 0) return f;
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, f->fd_, 0);
    if (p != MAP_FAILED) {
      f->data_ = static_cast<const unsigned char*>(p);
      f->mapped_ = true;
      return f;
    }
  }
  // Not a regular file (a pipe, /dev/stdin) or not mappable: read it whole.
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_file(path, std::string("cannot open the file: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail_file(path, "cannot read the file");
  f->copy_ = ss.str();
  f->data_ = reinterpret_cast<const unsigned char*>(f->copy_.data());
  f->size_ = f->copy_.size();
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<unsigned char*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::drop(size_t offset, size_t bytes) const {
  if (!mapped_ || offset >= size_) return;
  const size_t page = page_size();
  size_t begin = (offset + page - 1) / page * page;
  size_t end = std::min(offset + bytes, size_) / page * page;
  if (offset + bytes >= size_) end = (size_ + page - 1) / page * page;  // the last page, whole
  if (end > begin) ::madvise(const_cast<unsigned char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

std::string MappedFile::changed() const {
  if (!mapped_) return {};
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return std::string("cannot be checked (") + std::strerror(errno) + ")";
  if (static_cast<size_t>(st.st_size) != size_)
    return "was truncated or rewritten after it was loaded (" + std::to_string(st.st_size) + " bytes now, " +
           std::to_string(size_) + " then)";
  if (mtime_ns(st) != mtime_ns_) return "was modified after it was loaded";
  return {};
}

// ---- WeightStore ----

WeightStore::WeightStore(std::string model) : model_(std::move(model)) {}

WeightStore::~WeightStore() {
  for (Entry& e : entries_)
    if (e.data) ::munmap(e.data, e.map_bytes);
}

Tensor WeightStore::add(DType dtype, Shape shape, std::shared_ptr<const MappedFile> file, size_t offset,
                        const std::string& what) {
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  const size_t page = page_size();
  Entry e;
  e.bytes = bytes;
  e.map_bytes = std::max<size_t>(1, (bytes + page - 1) / page) * page;
  if (e.map_bytes >= kHostRoomCheckBytes) check_host_room(e.map_bytes, what);
  void* p = ::mmap(nullptr, e.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(ErrorCode::kOutOfMemory, "could not allocate " + format_bytes(bytes) + " for " + what +
                                             ": the system refused it (" + std::strerror(errno) + ")");
  e.data = static_cast<unsigned char*>(p);
  std::memcpy(e.data, file->data() + offset, bytes);
  file->drop(offset, bytes);
  e.offset = offset;
  std::lock_guard<std::mutex> lock(mu_);
  releases_ = releases_ && file->mapped();
  e.file = std::move(file);
  index_.emplace(e.data, static_cast<int>(entries_.size()));
  entries_.push_back(std::move(e));
  // The tensor shares the store's lifetime.
  return Tensor::share(dtype, std::move(shape), std::shared_ptr<const void>(shared_from_this(), p), p);
}

void WeightStore::keep_only(const std::vector<const void*>& keep) {
  std::set<const void*> kept(keep.begin(), keep.end());
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) {
    if (!e.data || kept.count(e.data)) continue;
    index_.erase(e.data);
    ::munmap(e.data, e.map_bytes);
    e = Entry{};
  }
}

int WeightStore::find(const void* data) const {
  auto it = index_.find(data);
  return it == index_.end() ? -1 : it->second;
}

bool WeightStore::owns(const void* data) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find(data) >= 0;
}

bool WeightStore::releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return releases_;
}

size_t WeightStore::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

size_t WeightStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.data ? e.bytes : 0;
  return n;
}

size_t WeightStore::resident_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.data && e.resident ? e.bytes : 0;
  return n;
}

void WeightStore::hold(int i) {
  Entry& e = entries_[static_cast<size_t>(i)];
  if (!e.resident) {
    if (std::string why = e.file->changed(); !why.empty())
      throw Error(ErrorCode::kNotFound,
                  model_ + ": planning a new input shape reads the weights from the file again, but the file " + why +
                      "; load the model again (Model::load)");
    ::mprotect(e.data, e.map_bytes, PROT_READ | PROT_WRITE);
    std::memcpy(e.data, e.file->data() + e.offset, e.bytes);
    e.file->drop(e.offset, e.bytes);
    e.resident = true;
  }
  ++e.users;
}

void WeightStore::drop(int i) {
  Entry& e = entries_[static_cast<size_t>(i)];
  if (--e.users > 0 || !releases_ || !e.resident) return;
  // The pages go back to the system; the range stays reserved, inaccessible.
  ::madvise(e.data, e.map_bytes, MADV_DONTNEED);
  ::mprotect(e.data, e.map_bytes, PROT_NONE);
  e.resident = false;
}

// ---- WeightHold ----

WeightHold::WeightHold(WeightHold&& o) noexcept : store_(std::move(o.store_)), counts_(std::move(o.counts_)) {
  o.counts_.clear();
}

WeightHold& WeightHold::operator=(WeightHold&& o) noexcept {
  if (this != &o) {
    clear();
    store_ = std::move(o.store_);
    counts_ = std::move(o.counts_);
    o.counts_.clear();
  }
  return *this;
}

void WeightHold::add(const Tensor& t) {
  if (!store_ || !t.raw()) return;
  std::lock_guard<std::mutex> lock(store_->mu_);
  int e = store_->find(t.raw());
  if (e < 0) return;
  store_->hold(e);
  ++counts_[e];
}

void WeightHold::drop(const Tensor& t) {
  if (!store_ || !t.raw()) return;
  std::lock_guard<std::mutex> lock(store_->mu_);
  int e = store_->find(t.raw());
  auto it = counts_.find(e);
  if (e < 0 || it == counts_.end()) return;
  store_->drop(e);
  if (--it->second == 0) counts_.erase(it);
}

void WeightHold::clear() {
  if (!store_) return;
  {
    std::lock_guard<std::mutex> lock(store_->mu_);
    for (const auto& [e, n] : counts_)
      for (int k = 0; k < n; ++k) store_->drop(e);
  }
  counts_.clear();
}

}  // namespace minirt
