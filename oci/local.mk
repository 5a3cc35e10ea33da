# oci/: image-spec types and JSON, compiled into libohbox (see src/libohbox/local.mk).
