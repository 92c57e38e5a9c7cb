#include <agentkit/inject.h>

#include <cxxabi.h>

#include <cstdlib>

namespace agentkit {

namespace {

std::string demangled(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

}  // namespace

std::string detail::type_name(std::type_index type) { return demangled(type.name()); }

std::shared_ptr<void> Dependencies::get(std::type_index type, const RunContext& ctx) const {
  const auto it = entries_.find(type);
  if (it == entries_.end()) {
    throw MissingDependency("no dependency of type " + demangled(type.name()) + " is provided");
  }
  const Entry& entry = it->second;
  if (entry.instance) return entry.instance;
  // Recursive: a factory may ask for another dependency of the same run.
  std::lock_guard lock(run_->mutex);
  auto& made = run_->made[type];
  if (!made) {
    if (!run_->making.insert(type).second) {
      throw MissingDependency("the per-run factory for " + entry.name + " asks for " + entry.name + " itself");
    }
    try {
      made = entry.factory(ctx);
    } catch (...) {
      run_->making.erase(type);
      throw;
    }
    run_->making.erase(type);
    if (!made) throw MissingDependency("the per-run factory for " + entry.name + " returned null");
  }
  return made;
}

std::shared_ptr<const Dependencies> Dependencies::for_run() const {
  auto copy = std::make_shared<Dependencies>();
  copy->entries_ = entries_;
  return copy;
}

}  // namespace agentkit
