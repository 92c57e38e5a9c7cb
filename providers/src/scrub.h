#pragma once
// Keeping a request's credentials out of the errors it raises, even where a
// server echoes them back. Shared by the transport and the model calls over
// it (pending_call.h). Internal to agentkit_providers.
#include <string>

#include <agentkit/providers/transport.h>
#include <agentkit/redact.h>

namespace agentkit::providers::detail {

// Values that must never appear in an error message: the request's
// credential headers' values.
inline Redactor secrets_of(const Headers& headers) {
  Redactor out;
  for (const auto& [name, value] : headers) out.add_header(name, value);
  return out;
}

// `e` with every one of `secrets` redacted from its message.
inline ProviderError scrubbed(const ProviderError& e, const Redactor& secrets) {
  std::string message = e.what();
  if (!secrets.redact_in_place(message)) return e;
  return e.with_message(std::move(message));
}

}  // namespace agentkit::providers::detail
