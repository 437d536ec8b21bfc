"""The surface origin: where MiniApp surfaces (untrusted HTML/CSS/JS) are served from.

A second loopback listener, separate from the shell's, serves each mounted surface
document once from its own ``m-<random>.localhost`` host name, with a CSP,
``Connection-Allowlist: ()`` and a Permissions-Policy that leave the frame no way to
reach the network or a powerful feature. The shell frames it with
``static/surface_host.js``; ``bridge.js`` is the frame-side half, inlined in every
document.
"""

from .document import SurfaceDocument, SurfaceRejected, SurfaceRejectionCode
from .headers import PERMISSIONS_POLICY, frame_source, surface_csp, surface_headers
from .origin import Mount, SurfaceOrigin, SurfaceReply

__all__ = [
    "PERMISSIONS_POLICY",
    "Mount",
    "SurfaceDocument",
    "SurfaceOrigin",
    "SurfaceRejected",
    "SurfaceRejectionCode",
    "SurfaceReply",
    "frame_source",
    "surface_csp",
    "surface_headers",
]
