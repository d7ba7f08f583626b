#pragma once
// Zero-copy zip iterator over a key column and a payload column (paper Section 3.2.2): sorting and
// merging algorithms move (key, payload) tuples in lockstep without copying them into a pair array.
//
//   ZipIterator<K, P>        random access; *it is a ZipRef<K, P> proxy (two pointers), value_type is
//                            KeyPayload<K, P> {key, payload}. K and P may be const (read-only runs).
//   swap(ZipRef, ZipRef)     found by ADL, so std::iter_swap / std::sort permute both columns.
//   operator<                orders by key only (payloads are opaque words); KeyLess does the same and
//                            accepts any mix of proxies and values.
//
// Works with std::sort, std::stable_sort, __gnu_parallel::sort and __gnu_parallel::multiway_merge
// (libstdc++ parallel mode; see host_merge/detail/gnu_parallel_zip.hpp for the adaptations that the
// parallel-mode merge needs, and its one limitation). The key-only form needs no zip: plain pointers.
#include <compare>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>

namespace mgjoin::host_merge {

/// One tuple held by value: what a ZipIterator's elements are when copied out of the columns.
template <class K, class P>
struct KeyPayload {
  K key;
  P payload;

  /// Orders by key only, like every comparison in this header.
  friend bool operator<(const KeyPayload& a, const KeyPayload& b) { return a.key < b.key; }
};

/// Proxy reference to the tuple (keys[i], payloads[i]). Assignment writes both columns; copying the
/// proxy itself (construction) copies the two pointers, as a reference would bind.
template <class K, class P>
class ZipRef {
 public:
  using value_type = KeyPayload<std::remove_const_t<K>, std::remove_const_t<P>>;

  ZipRef(K* key, P* payload) noexcept : key_(key), payload_(payload) {}
  ZipRef(const ZipRef&) noexcept = default;

  // Assignment through the proxy writes the referenced tuple (value semantics, like T& = T&).
  ZipRef& operator=(const ZipRef& other) noexcept { return assign(other.key(), other.payload()); }
  ZipRef& operator=(const value_type& v) noexcept { return assign(v.key, v.payload); }
  // The const forms let a prvalue proxy be written, as in `*out = x` (std::indirectly_writable).
  const ZipRef& operator=(const ZipRef& other) const noexcept { return assign(other.key(), other.payload()); }
  const ZipRef& operator=(const value_type& v) const noexcept { return assign(v.key, v.payload); }

  operator value_type() const noexcept { return {*key_, *payload_}; }

  K& key() const noexcept { return *key_; }
  P& payload() const noexcept { return *payload_; }

  friend void swap(ZipRef a, ZipRef b) noexcept {
    using std::swap;
    swap(*a.key_, *b.key_);
    swap(*a.payload_, *b.payload_);
  }

  friend bool operator<(const ZipRef& a, const ZipRef& b) noexcept { return a.key() < b.key(); }
  friend bool operator<(const ZipRef& a, const value_type& b) noexcept { return a.key() < b.key; }
  friend bool operator<(const value_type& a, const ZipRef& b) noexcept { return a.key < b.key(); }

 private:
  template <class Kv, class Pv>
  const ZipRef& assign(const Kv& key, const Pv& payload) const noexcept {
    *key_ = key;
    *payload_ = payload;
    return *this;
  }
  template <class Kv, class Pv>
  ZipRef& assign(const Kv& key, const Pv& payload) noexcept {
    *key_ = key;
    *payload_ = payload;
    return *this;
  }

  K* key_;
  P* payload_;
};

/// Random-access iterator over two parallel columns; both pointers advance together.
template <class K, class P>
class ZipIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = KeyPayload<std::remove_const_t<K>, std::remove_const_t<P>>;
  using difference_type = std::ptrdiff_t;
  using reference = ZipRef<K, P>;
  using pointer = void;

  ZipIterator() noexcept = default;
  ZipIterator(K* keys, P* payloads) noexcept : key_(keys), payload_(payloads) {}

  reference operator*() const noexcept { return {key_, payload_}; }
  reference operator[](difference_type n) const noexcept { return {key_ + n, payload_ + n}; }

  ZipIterator& operator++() noexcept { return *this += 1; }
  ZipIterator& operator--() noexcept { return *this -= 1; }
  ZipIterator operator++(int) noexcept { auto old = *this; ++*this; return old; }
  ZipIterator operator--(int) noexcept { auto old = *this; --*this; return old; }
  ZipIterator& operator+=(difference_type n) noexcept { key_ += n; payload_ += n; return *this; }
  ZipIterator& operator-=(difference_type n) noexcept { key_ -= n; payload_ -= n; return *this; }
  friend ZipIterator operator+(ZipIterator it, difference_type n) noexcept { return it += n; }
  friend ZipIterator operator+(difference_type n, ZipIterator it) noexcept { return it += n; }
  friend ZipIterator operator-(ZipIterator it, difference_type n) noexcept { return it -= n; }
  friend difference_type operator-(const ZipIterator& a, const ZipIterator& b) noexcept { return a.key_ - b.key_; }

  // Both pointers move in lockstep, so the key pointer alone identifies the position.
  friend bool operator==(const ZipIterator& a, const ZipIterator& b) noexcept { return a.key_ == b.key_; }
  friend auto operator<=>(const ZipIterator& a, const ZipIterator& b) noexcept { return a.key_ <=> b.key_; }

  K* keys() const noexcept { return key_; }
  P* payloads() const noexcept { return payload_; }

 private:
  K* key_ = nullptr;
  P* payload_ = nullptr;
};

template <class K, class P>
ZipIterator<K, P> make_zip(K* keys, P* payloads) noexcept {
  return {keys, payloads};
}

namespace detail {
template <class T> struct is_zip_ref : std::false_type {};
template <class K, class P> struct is_zip_ref<ZipRef<K, P>> : std::true_type {};

template <class T>
decltype(auto) key_of(const T& x) noexcept {
  if constexpr (is_zip_ref<T>::value) {
    return x.key();
  } else if constexpr (requires { x.key; }) {
    return (x.key);
  } else {
    return (x);  // key-only form: the element is the key
  }
}
}  // namespace detail

/// Key order for any mix of proxies, KeyPayload values and plain keys: one comparator type serves the
/// merge's loser tree (values), its guarded iterators (proxies) and the key-only form.
struct KeyLess {
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept {
    return detail::key_of(a) < detail::key_of(b);
  }
};

}  // namespace mgjoin::host_merge

#include "host_merge/detail/gnu_parallel_zip.hpp"
