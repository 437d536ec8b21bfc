"""The MiniApp formats: what a manifest, a bundle, a tool schema and a version order
are, as pure data and validation with no Runtime state.

They sit just above ``lineup.protocol`` (the only package they import), so the
publisher tools and the AppServer catalog (``lineup.delivery``, ``lineup.server``) can
check exactly what a Runtime checks without loading the Runtime. The package imports
none of its modules: import the one you need.

- ``lineup.formats.manifest``: ``AppManifest``, ``Surface``, ``load_manifest``,
  ``ManifestError``, ``ManifestErrorCode``, ``HOST_VERSION``, ``MAX_MANIFEST_BYTES``,
  ``encode_manifest``, ``to_inventory_application``, ``tool_descriptors``,
  ``compiled_tools``.
- ``lineup.formats.bundle``: ``AppBundle``, ``SurfaceSource``, ``load_bundle``,
  ``load_bundle_dir``, ``surface_source``, ``files_digest``, ``BundleError``,
  ``BundleErrorCode``, ``MAX_BUNDLE_FILES``, ``MAX_BUNDLE_TOTAL_BYTES``.
- ``lineup.formats.schemas``: ``compile_schema``, ``compile_tool``,
  ``CompiledSchemas``, ``CompiledTool``, ``SchemaProblem``, ``SchemaError``,
  ``SchemaErrorCode``, ``DRAFT_2020_12``, ``MAX_SCHEMA_BYTES``, ``MAX_SCHEMA_DEPTH``.
- ``lineup.formats.semver``: ``compare_semver``.
"""
