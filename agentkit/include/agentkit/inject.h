#pragma once
// Dependency injection for tools (seed 003's Inject[T]): a function tool's
// parameter of type Inject<T> is resolved from the run's Dependencies
// (RunContext::dependencies), never advertised to the model and never read
// from the arguments. A run whose tools need a type its context does not
// provide fails at its start, naming the tool and the type, before the
// model is asked; nothing fails at call time.
//
// Two kinds of provider:
//   - provide<T>(instance): one object for every run (a connection pool, a
//     clock, a client);
//   - provide_per_run<T>(factory): one object per run, made on the first
//     call that needs it, from that run's context (a unit of work, a
//     per-request cache). A sub-run (as_tool) gets its own.
//
// Example:
//   auto lookup = agentkit::tool("lookup_order")
//                     .doc("Look an order up by its id.")
//                     .side_effecting(false)
//                     .params("order_id")
//                     .fn([](const std::string& id, agentkit::Inject<OrderDb> db) { return db->find(id); });
//   auto deps = std::make_shared<agentkit::Dependencies>();
//   deps->provide<OrderDb>(std::make_shared<OrderDb>(pool));
//   ctx.dependencies = deps;
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>

#include <agentkit/error.h>

namespace agentkit {

class RunContext;

namespace detail {
// The type's name as the source spells it ("OrderDb", "std::vector<int>").
std::string type_name(std::type_index type);
}  // namespace detail

// A tool parameter filled from the run's Dependencies.
template <class T>
class Inject {
 public:
  using type = T;
  explicit Inject(std::shared_ptr<T> value) noexcept : value_(std::move(value)) {}
  T* operator->() const noexcept { return value_.get(); }
  T& operator*() const noexcept { return *value_; }
  const std::shared_ptr<T>& get() const noexcept { return value_; }

 private:
  std::shared_ptr<T> value_;
};

// Thrown by Dependencies::get for a type nobody provides (invalid_argument).
class MissingDependency : public Error {
 public:
  explicit MissingDependency(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// The objects a run's tools may ask for, by type. Thread-safe once set on a
// context (providers are added before; get() may run on several threads).
class Dependencies {
 public:
  template <class T>
  Dependencies& provide(std::shared_ptr<T> instance) {
    if (!instance) throw Error(ErrorCode::invalid_argument, "Dependencies: a null " + detail::type_name(typeid(T)));
    entries_[typeid(T)] = Entry{std::move(instance), nullptr, detail::type_name(typeid(T))};
    return *this;
  }
  template <class T>
  Dependencies& provide_per_run(std::function<std::shared_ptr<T>(const RunContext&)> factory) {
    if (!factory) throw Error(ErrorCode::invalid_argument, "Dependencies: an empty factory for " + detail::type_name(typeid(T)));
    entries_[typeid(T)] = Entry{nullptr,
                                [factory = std::move(factory)](const RunContext& ctx) -> std::shared_ptr<void> {
                                  return factory(ctx);
                                },
                                detail::type_name(typeid(T))};
    return *this;
  }

  bool provides(std::type_index type) const { return entries_.contains(type); }

  // The object for T: the instance, or this run's (made now on first use).
  // Throws MissingDependency naming T when nobody provides it, or when a
  // per-run factory returns null; a factory's own exception passes through.
  template <class T>
  std::shared_ptr<T> get(const RunContext& ctx) const {
    return std::static_pointer_cast<T>(get(typeid(T), ctx));
  }
  std::shared_ptr<void> get(std::type_index type, const RunContext& ctx) const;

  // A copy for one run: the same providers, and its own per-run objects.
  // The run engine calls it when a run starts.
  std::shared_ptr<const Dependencies> for_run() const;

 private:
  struct Entry {
    std::shared_ptr<void> instance;
    std::function<std::shared_ptr<void>(const RunContext&)> factory;
    std::string name;
  };
  struct RunObjects {
    std::recursive_mutex mutex;
    std::map<std::type_index, std::shared_ptr<void>> made;
    std::set<std::type_index> making;  // factories running on this thread's stack: a cycle is an error
  };
  std::map<std::type_index, Entry> entries_;
  std::shared_ptr<RunObjects> run_ = std::make_shared<RunObjects>();
};

}  // namespace agentkit
