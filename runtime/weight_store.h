// A model's large initializers in memory the runtime can give back and take
// again. The loader maps the model file (MappedFile) and copies each large
// initializer's bytes from the mapping into a WeightStore entry of its own,
// once; the tensor it makes there is the model's constant for its lifetime
// (its address never changes). Planning holds what it reads (WeightHold):
// a plan holds, for as long as it lives, only the constants its kernels
// read as they are at run time; what every kernel packed into a form of its
// own is held by no one once planned, and the store gives that memory back
// to the system. When a later plan (a new input shape) holds it again, the
// store copies the bytes in again from the file first.
//
//   auto file = MappedFile::open("resnet50.onnx");
//   auto store = std::make_shared<WeightStore>(file->path());
//   Tensor w = store->add(DType::kFloat32, {64, 3, 7, 7}, file, offset);  // bytes copied now
//   {
//     WeightHold hold(store);
//     hold.add(w);       // in memory while held (copied in again if it was given back)
//   }                    // no one holds w now: its memory goes back to the system
//
// Only a store whose every entry came from a mapped file gives memory back
// (a model loaded from memory keeps its weights). An entry that is given
// back is mapped inaccessible, so a read that held nothing faults at once
// instead of reading zeros. Thread-safe.
#pragma once

#include <minirt/tensor.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace minirt {

// A file mapped read-only into memory (or, where the system cannot map it,
// read whole into memory of its own).
class MappedFile {
 public:
  // Throws kNotFound naming the file when it is missing, a directory or
  // cannot be read.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Whether the bytes are the file's pages (read again from the file when
  // dropped) rather than a copy.
  bool mapped() const { return mapped_; }
  // Lets the system take back the pages of [offset, offset + bytes) that
  // this process has read (the whole pages inside the range); a later read
  // gets them from the file again. Nothing for a copy.
  void drop(size_t offset, size_t bytes) const;
  // Empty while the file on disk is the one mapped, unchanged; else why not
  // ("was modified after it was loaded"). A file replaced by another (a
  // rename over it) does not count: the mapping keeps the old one's bytes.
  std::string changed() const;

 private:
  MappedFile() = default;
  std::string path_;
  int fd_ = -1;
  bool mapped_ = false;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string copy_;  // when not mapped
  int64_t mtime_ns_ = 0;
};

class WeightStore : public std::enable_shared_from_this<WeightStore> {
 public:
  // Tensors smaller than this stay in ordinary memory (a page or more each
  // is not worth giving back).
  static constexpr size_t kMinBytes = size_t{64} << 10;

  // `model` names the model file in messages.
  explicit WeightStore(std::string model);
  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // A tensor of `dtype` and `shape` holding the bytes at `offset` of `file`
  // (as many as the shape needs, all present: the caller checked), copied
  // now into memory of the entry's own. The tensor keeps the store alive.
  // `what` names the tensor for the memory check of a large one.
  Tensor add(DType dtype, Shape shape, std::shared_ptr<const MappedFile> file, size_t offset, const std::string& what);
  // Frees the entries whose data is not in `keep` (tensors the model no
  // longer holds: float16 weights the load converted to float32).
  void keep_only(const std::vector<const void*>& keep);

  // Whether `data` is an entry's.
  bool owns(const void* data) const;
  // Whether entries are given back when no one holds them (every entry's
  // file is mapped).
  bool releases() const;
  size_t entries() const;
  size_t bytes() const;           // of all entries
  size_t resident_bytes() const;  // of those in memory now

 private:
  friend class WeightHold;
  struct Entry {
    unsigned char* data = nullptr;
    size_t bytes = 0;      // the tensor's
    size_t map_bytes = 0;  // whole pages
    std::shared_ptr<const MappedFile> file;
    size_t offset = 0;
    int users = 0;
    bool resident = true;
  };
  // Index of the entry holding `data`, -1 for none; with mu_ held.
  int find(const void* data) const;
  void hold(int e);  // with mu_ held: one more user; in memory again first if it was given back
  void drop(int e);  // with mu_ held: one user fewer; the last gives it back
  std::string model_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::unordered_map<const void*, int> index_;
  bool releases_ = true;
};

// A set of constants kept in memory while it lives (see above). Tensors not
// in the store are ignored. Move-only; not thread-safe itself (each planner
// has its own).
class WeightHold {
 public:
  WeightHold() = default;
  explicit WeightHold(std::shared_ptr<WeightStore> store) : store_(std::move(store)) {}
  ~WeightHold() { clear(); }
  WeightHold(WeightHold&& o) noexcept;
  WeightHold& operator=(WeightHold&& o) noexcept;
  WeightHold(const WeightHold&) = delete;
  WeightHold& operator=(const WeightHold&) = delete;

  // Holds t's entry once more (each add is undone by one drop), copying it
  // in again first when it had been given back; throws kInvalidModel naming
  // the file when the file changed on disk since it was loaded.
  void add(const Tensor& t);
  void drop(const Tensor& t);
  void clear();
  const std::shared_ptr<WeightStore>& store() const { return store_; }

 private:
  std::shared_ptr<WeightStore> store_;
  std::unordered_map<int, int> counts_;  // entry -> adds not dropped
};

}  // namespace minirt
