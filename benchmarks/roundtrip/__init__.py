"""Helpers of benchmarks/roundtrip_browser.py: the in-page probe, the Chainlit app, the
hop tracer and its analysis."""
