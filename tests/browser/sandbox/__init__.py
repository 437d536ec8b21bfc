"""The sandbox conformance suite: hostile surface bundles in real Chromium."""
