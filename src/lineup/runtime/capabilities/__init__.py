"""Host capabilities (spec 000 §5, spec 002 §7.3, §9): what an agent (``app.call``) or
a MiniApp (``capabilities.request``) may request, and the gateway that decides."""
