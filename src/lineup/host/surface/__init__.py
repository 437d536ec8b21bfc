"""The surface origin: where MiniApp surfaces (untrusted HTML/CSS/JS) are served from.

A second loopback listener, separate from the shell's, serves each mounted surface
document once from its own ``m-<random>.localhost`` host name, with a CSP,
``Connection-Allowlist: ()`` and a Permissions-Policy that leave the frame no way to
reach the network or a powerful feature. The shell frames it with
``static/surface_host.js``; ``bridge.js`` is the frame-side half, inlined in every
document. An MCP App view is mounted inside a document of ours (``mcp_document.py``)
whose ``mcp_bridge.js`` speaks MCP Apps JSON-RPC to the nested view.
"""

from .document import SurfaceDocument, SurfaceRejected, SurfaceRejectionCode
from .headers import PERMISSIONS_POLICY, frame_source, surface_csp, surface_headers
from .mcp_document import (
    MAX_VIEW_BYTES,
    MCP_APP_MIME_TYPE,
    DeclaredDomains,
    declared_domains,
    mcp_view_document,
)
from .origin import Mount, SurfaceOrigin, SurfaceReply

__all__ = [
    "MAX_VIEW_BYTES",
    "MCP_APP_MIME_TYPE",
    "PERMISSIONS_POLICY",
    "DeclaredDomains",
    "Mount",
    "SurfaceDocument",
    "SurfaceOrigin",
    "SurfaceRejected",
    "SurfaceRejectionCode",
    "SurfaceReply",
    "declared_domains",
    "frame_source",
    "mcp_view_document",
    "surface_csp",
    "surface_headers",
]
