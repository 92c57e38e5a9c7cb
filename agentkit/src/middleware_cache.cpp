// idempotent() and memoize(): the two layers that may answer a call without
// running it. Both read effectively_side_effecting() (the tool's declaration
// ORed with the request's claim), never cache a failure, and never answer a
// call that needs approval and has none.
#include <agentkit/invoker.h>
#include <agentkit/detail/logging.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>

namespace agentkit {

namespace {

constexpr char kSep = '\x1f';

std::string call_key(const ToolRequest& req, const RunContext& ctx) {
  std::string key = ctx.scope.key();
  key += kSep;
  key += req.name;
  key += kSep;
  key += canonical_dump(req.arguments);
  return key;
}

// At most one execution per key. An entry without a result is in flight;
// an entry with one holds an ok result. Failed flights are erased, so the
// next caller (or a waiter) runs the call again.
struct IdempotencyTable {
  struct Entry {
    std::optional<ToolResult> result;
    std::chrono::steady_clock::time_point settled_at;
  };
  std::mutex mutex;
  std::condition_variable settled;
  std::unordered_map<std::string, Entry> entries;
  std::size_t inserts = 0;

  // Drops settled entries older than `retention` now and then, so a shared,
  // long-lived invoker is bounded by recent runs. In-flight entries stay.
  void sweep(std::chrono::steady_clock::time_point now, std::chrono::milliseconds retention) {
    if (++inserts % 256 != 0) return;
    std::erase_if(entries, [&](const auto& kv) { return kv.second.result && now - kv.second.settled_at > retention; });
  }
};

struct MemoTable {
  struct Entry {
    ToolResult result;
    std::chrono::steady_clock::time_point expires;
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  std::size_t inserts = 0;

  // Drops expired entries now and then so a long-lived cache stays bounded
  // by what is live, not by everything ever called.
  void sweep(std::chrono::steady_clock::time_point now) {
    if (++inserts % 256 != 0) return;
    std::erase_if(entries, [now](const auto& kv) { return kv.second.expires <= now; });
  }
};

}  // namespace

Middleware idempotent(std::chrono::milliseconds retention) {
  auto table = std::make_shared<IdempotencyTable>();
  return [table, retention](const ToolRequest& req, RunContext& ctx, const Next& next) {
    if (!req.effectively_side_effecting()) return next(req, ctx);
    // A call no human approved yet goes to the gate, never to a recorded result.
    if (!cleared(req, ctx)) return next(req, ctx);

    // Pinned to the run (correlation id): replay never crosses runs.
    const std::string call = call_key(req, ctx);
    const std::string key = ctx.correlation_id + kSep + call;
    {
      std::unique_lock lock(table->mutex);
      for (;;) {
        auto it = table->entries.find(key);
        if (it == table->entries.end()) {
          table->entries.emplace(key, IdempotencyTable::Entry{});
          break;  // this caller runs the call
        }
        if (it->second.result) return *it->second.result;
        table->settled.wait(lock);
      }
    }

    auto settle = [&](const ToolResult* ok) {
      std::lock_guard lock(table->mutex);
      if (ok) {
        const auto now = std::chrono::steady_clock::now();
        auto& entry = table->entries[key];
        entry.result = *ok;
        entry.settled_at = now;
        table->sweep(now, retention);
      } else {
        table->entries.erase(key);
      }
      table->settled.notify_all();
    };
    ToolResult result;
    bool remembered = false;
    try {
      // A durable run's ledger holds what earlier processes of this run did.
      if (auto earlier = req.ledger ? req.ledger->recall(call) : std::nullopt) {
        result = *std::move(earlier);
        remembered = true;
      } else {
        result = next(req, ctx);
      }
    } catch (...) {
      settle(nullptr);
      throw;
    }
    if (!remembered && req.ledger && result.is_ok()) {
      // The call has happened: failing to keep its result must not hide it.
      try {
        req.ledger->remember(call, result);
      } catch (const std::exception& e) {
        detail::logger_or_null(ctx.logger)
            ->error("tool '{}' (call {}): keeping its result for idempotent() failed: {}", req.name, req.call_id,
                    e.what());
      }
    }
    settle(result.is_ok() ? &result : nullptr);
    return result;
  };
}

Middleware memoize(std::chrono::milliseconds ttl) {
  auto table = std::make_shared<MemoTable>();
  return [table, ttl](const ToolRequest& req, RunContext& ctx, const Next& next) {
    // Caching a side effect would report success for an action that never
    // happened; a missed cache hit only costs a re-execution.
    if (req.effectively_side_effecting()) return next(req, ctx);
    // A call that needs approval runs on its own decision every time: a
    // cached answer never stands in for one. A tool with an approval rule is
    // never cached, so its rule runs once per call, at the gate.
    if (needs_approval(req, ctx.gate_tier())) return next(req, ctx);

    // Never across scopes (call_key starts with the scope); across runs only
    // for a tool that declares it.
    const bool shared = req.tool && req.tool->spec().effects.shared_cache;
    const std::string key = (shared ? std::string() : ctx.correlation_id) + kSep + call_key(req, ctx);
    {
      std::lock_guard lock(table->mutex);
      auto it = table->entries.find(key);
      if (it != table->entries.end()) {
        if (std::chrono::steady_clock::now() < it->second.expires) return it->second.result;
        table->entries.erase(it);
      }
    }

    ToolResult result = next(req, ctx);
    if (result.is_ok()) {
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(table->mutex);
      table->entries.insert_or_assign(key, MemoTable::Entry{result, now + ttl});
      table->sweep(now);
    }
    return result;
  };
}

}  // namespace agentkit
