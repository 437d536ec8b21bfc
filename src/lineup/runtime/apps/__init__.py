"""The MiniApp kernel (spec 002 sections 5-8): manifests, the tool-call machine,
instances and focus. The modules here are pure; the Runtime persists what they decide."""
