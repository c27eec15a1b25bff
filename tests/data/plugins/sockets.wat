;; sockets — imports wasi:sockets/tcp: refused at install by name. Otherwise the loop plugin.
(component
  (import "wasi:sockets/tcp@0.2.0" (instance (export "connect" (func (param "to" string)))))
  (type $manifest (record (field "name" string) (field "version" string)
                          (field "extensions" (list string)) (field "logo" (option string))))
  (type $doc (record (field "name" string) (field "bytes" (list u8))))
  (type $input (variant (case "document" $doc) (case "files" (list string))))
  (type $options (list (tuple string string)))
  (core module $m
    (memory (export "memory") 1)
    (data (i32.const 0) "loop1.0.0.loop")
    ;; manifest at 256: name (0,4) version (4,5) extensions (512,1) logo none; [".loop"] at 512
    (data (i32.const 256) "\00\00\00\00\04\00\00\00\04\00\00\00\05\00\00\00\00\02\00\00\01\00\00\00\00")
    (data (i32.const 512) "\09\00\00\00\05\00\00\00")
    (global $heap (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)  ;; bump, 8-aligned, never frees
      (global.set $heap (i32.and (i32.add (global.get $heap) (i32.const 7)) (i32.const -8)))
      (global.set $heap (i32.add (global.get $heap) (local.get 3)))
      (i32.sub (global.get $heap) (local.get 3)))
    (func (export "describe") (result i32) (i32.const 256))
    (func (export "parse") (param i32 i32 i32 i32 i32 i32 i32) (result i32)
      (loop $forever (br $forever))
      unreachable))
  (core instance $i (instantiate $m))
  (func $describe (result $manifest) (canon lift (core func $i "describe")
    (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func $parse (param "subject" $input) (param "options" $options) (result (result (list u8) (error string)))
    (canon lift (core func $i "parse") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (instance $preprocessor
    (export "manifest" (type $manifest)) (export "doc" (type $doc)) (export "input" (type $input))
    (export "describe" (func $describe)) (export "parse" (func $parse)) (export "assemble" (func $parse)))
  (export "drsg:preprocess/preprocessor@1.0.0" (instance $preprocessor))
)
