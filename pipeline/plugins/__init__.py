"""drsg.pipeline.plugins: the WebAssembly parser-plugin host and the registry of installed plugins."""
