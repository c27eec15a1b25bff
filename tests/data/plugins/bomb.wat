;; bomb — describe answers; parse grows memory 1 MiB at a time until memory.grow fails, then aborts
;; the way an allocator does on out-of-memory (unreachable).
(component
  (type $manifest (record (field "name" string) (field "version" string)
                          (field "extensions" (list string)) (field "logo" (option string))))
  (type $doc (record (field "name" string) (field "bytes" (list u8))))
  (type $input (variant (case "document" $doc) (case "files" (list string))))
  (type $options (list (tuple string string)))
  (type $node (record (field "key" string) (field "label" string)
                      (field "extra-labels" (list string)) (field "properties" string)))
  (type $edge (record (field "src" string) (field "dst" string) (field "type" string) (field "properties" string)))
  (type $report (record (field "facts" u32) (field "prose-chars" u32) (field "skipped" u32)
                        (field "notes" (list string))))
  (type $output (record (field "nodes" (list $node)) (field "edges" (list $edge))
                        (field "prose" string) (field "report" $report)))
  (core module $m
    (memory (export "memory") 1)
    (data (i32.const 0) "bomb1.0.0.bomb")
    ;; manifest at 256: name (0,4) version (4,5) extensions (512,1) logo none; [".loop"] at 512
    (data (i32.const 256) "\00\00\00\00\04\00\00\00\04\00\00\00\05\00\00\00\00\02\00\00\01\00\00\00\00")
    (data (i32.const 512) "\09\00\00\00\05\00\00\00")
    (global $heap (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)  ;; bump, 8-aligned, never frees
      (global.set $heap (i32.and (i32.add (global.get $heap) (i32.const 7)) (i32.const -8)))
      (global.set $heap (i32.add (global.get $heap) (local.get 3)))
      (i32.sub (global.get $heap) (local.get 3)))
    (func (export "describe") (result i32) (i32.const 256))
    (func (export "assemble") (param i32 i32 i32 i32) (result i32) unreachable)  ;; never reached in the tests
    (func (export "parse") (param i32 i32 i32 i32 i32 i32 i32) (result i32)
      (loop $more
        (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
      unreachable))
  (core instance $i (instantiate $m))
  (func $describe (result $manifest) (canon lift (core func $i "describe")
    (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func $parse (param "subject" $input) (param "options" $options) (result (result (list u8) (error string)))
    (canon lift (core func $i "parse") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func $assemble (param "partials" (list (list u8))) (param "options" $options)
    (result (result $output (error string)))
    (canon lift (core func $i "assemble") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (instance $preprocessor
    (export "manifest" (type $manifest)) (export "doc" (type $doc)) (export "input" (type $input))
    (export "node" (type $node)) (export "edge" (type $edge)) (export "report" (type $report))
    (export "output" (type $output))
    (export "describe" (func $describe)) (export "parse" (func $parse)) (export "assemble" (func $assemble)))
  (export "drsg:preprocess/preprocessor@1.0.0" (instance $preprocessor))
)
