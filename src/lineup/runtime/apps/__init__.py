"""The MiniApp kernel (spec 002 sections 5-8): the registry, the tool-call machine,
instances and focus. The manifest and bundle formats it loads are in ``lineup.formats``.
The modules here are pure; the Runtime persists what they decide."""
