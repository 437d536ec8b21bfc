"""The desktop host (``lineup desktop``, ``lineup demo --desktop``): the same Runtime
and Web Host shell in a native QtWebEngine window, with native providers behind the
Runtime's capability decisions. Needs the ``desktop`` extra (PySide6)."""
