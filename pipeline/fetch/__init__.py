"""drsg.pipeline.fetch: fetching URLs safely (the address policy and a guarded download)."""
