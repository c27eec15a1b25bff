;; echo@1.0.0 — a well-behaved plugin implementing the whole drsg:preprocess@1.0.0 world by hand.
;; describe: a static manifest (claims .txt). parse: document -> its bytes; files -> host read of the
;; first path (its result<list<u8>, string> is laid out exactly like parse's, so it is passed on as is:
;; a host error reaches the caller). assemble: one node keyed by the first partial's text, one edge,
;; prose = the host label, report.notes = host list(".txt").
;; Canonical ABI: string/list = (ptr, len) i32 pairs; results over one flat value go through memory.
(component
  (type $manifest (record (field "name" string) (field "version" string)
                          (field "extensions" (list string)) (field "logo" (option string))))
  (type $doc (record (field "name" string) (field "bytes" (list u8))))
  (type $input (variant (case "document" $doc) (case "files" (list string))))
  (type $node (record (field "key" string) (field "label" string)
                      (field "extra-labels" (list string)) (field "properties" string)))
  (type $edge (record (field "src" string) (field "dst" string) (field "type" string) (field "properties" string)))
  (type $report (record (field "facts" u32) (field "prose-chars" u32) (field "skipped" u32)
                        (field "notes" (list string))))
  (type $output (record (field "nodes" (list $node)) (field "edges" (list $edge))
                        (field "prose" string) (field "report" $report)))
  (type $options (list (tuple string string)))

  (import "drsg:preprocess/host@1.0.0" (instance $host
    (export "list" (func (param "suffix" string) (result (result (list string) (error string)))))
    (export "read" (func (param "path" string) (result (result (list u8) (error string)))))
    (export "label" (func (result (option string))))))

  ;; memory and a bump allocator in their own module, so the host imports can be lowered with them
  (core module $libc
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 16384))
    (func (export "realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get $align))))
      (global.set $heap (i32.add (local.get $p) (local.get $size)))
      (block $fits
        (br_if $fits (i32.le_u (global.get $heap) (i32.shl (memory.size) (i32.const 16))))
        (br_if $fits (i32.ne (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1)))
                             (i32.const -1)))
        unreachable)
      (if (local.get $old) (then (memory.copy (local.get $p) (local.get $old) (local.get $old_size))))
      (local.get $p)))
  (core instance $libc (instantiate $libc))

  (core func $list (canon lower (func $host "list")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (core func $read (canon lower (func $host "read")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (core func $label (canon lower (func $host "label")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))

  (core module $main
    (import "libc" "memory" (memory 1))
    (import "host" "list" (func $list (param i32 i32 i32)))
    (import "host" "read" (func $read (param i32 i32 i32)))
    (import "host" "label" (func $label (param i32)))
    ;; text at 0..: "echo" 0, "1.0.0" 4, ".txt" 9, "File" 13, "Echo" 17, {"n":1} 21, "echo" 28, SEEN_BY 32,
    ;; {} 39, "no partials" 41
    (data (i32.const 0) "echo1.0.0.txtFileEcho{\"n\":1}echoSEEN_BY{}no partials")
    ;; manifest at 256: name (0,4) version (4,5) extensions (512,1) logo none
    (data (i32.const 256) "\00\00\00\00\04\00\00\00\04\00\00\00\05\00\00\00\00\02\00\00\01\00\00\00\00")
    ;; list<string> [".txt"] at 512, ["Echo"] at 520
    (data (i32.const 512) "\09\00\00\00\04\00\00\00\11\00\00\00\04\00\00\00")
    (func (export "describe") (result i32) (i32.const 256))

    ;; parse(disc, a, b, c, d, options ptr, options len) -> ptr to result<list<u8>, string> at 1024
    (func (export "parse") (param $disc i32) (param $a i32) (param $b i32) (param $c i32) (param $d i32)
                           (param $opts i32) (param $nopts i32) (result i32)
      (if (i32.eqz (local.get $disc))
        (then ;; document: ok(doc.bytes)
          (i32.store8 (i32.const 1024) (i32.const 0))
          (i32.store (i32.const 1028) (local.get $c))
          (i32.store (i32.const 1032) (local.get $d))
          (return (i32.const 1024))))
      ;; files: the host's answer for the first path (an empty list reads "")
      (if (i32.eqz (local.get $b))
        (then (call $read (i32.const 0) (i32.const 0) (i32.const 1024)))
        (else (call $read (i32.load (local.get $a)) (i32.load offset=4 (local.get $a)) (i32.const 1024))))
      (i32.const 1024))

    ;; assemble(partials ptr, len, options ptr, len) -> ptr to result<output, string> at 2048
    (func (export "assemble") (param $parts i32) (param $nparts i32) (param $opts i32) (param $nopts i32)
                              (result i32)
      (if (i32.eqz (local.get $nparts))
        (then (i32.store8 (i32.const 2048) (i32.const 1))
              (i32.store (i32.const 2052) (i32.const 41))
              (i32.store (i32.const 2056) (i32.const 11))
              (return (i32.const 2048))))
      ;; node at 2200: key = partials[0], label "File", extra-labels ["Echo"], properties {"n":1}
      (i32.store (i32.const 2200) (i32.load (local.get $parts)))
      (i32.store (i32.const 2204) (i32.load offset=4 (local.get $parts)))
      (i32.store (i32.const 2208) (i32.const 13)) (i32.store (i32.const 2212) (i32.const 4))
      (i32.store (i32.const 2216) (i32.const 520)) (i32.store (i32.const 2220) (i32.const 1))
      (i32.store (i32.const 2224) (i32.const 21)) (i32.store (i32.const 2228) (i32.const 7))
      ;; edge at 2240: key -[SEEN_BY]-> echo, properties {}
      (i32.store (i32.const 2240) (i32.load (local.get $parts)))
      (i32.store (i32.const 2244) (i32.load offset=4 (local.get $parts)))
      (i32.store (i32.const 2248) (i32.const 28)) (i32.store (i32.const 2252) (i32.const 4))
      (i32.store (i32.const 2256) (i32.const 32)) (i32.store (i32.const 2260) (i32.const 7))
      (i32.store (i32.const 2264) (i32.const 39)) (i32.store (i32.const 2268) (i32.const 2))
      ;; label() -> option<string> at 2300; list(".txt") -> result<list<string>, string> at 2320
      (call $label (i32.const 2300))
      (call $list (i32.const 9) (i32.const 4) (i32.const 2320))
      ;; the output
      (i32.store8 (i32.const 2048) (i32.const 0))
      (i32.store (i32.const 2052) (i32.const 2200)) (i32.store (i32.const 2056) (i32.const 1))
      (i32.store (i32.const 2060) (i32.const 2240)) (i32.store (i32.const 2064) (i32.const 1))
      (i32.store (i32.const 2068) (i32.const 0)) (i32.store (i32.const 2072) (i32.const 0))
      (if (i32.load8_u (i32.const 2300))
        (then (i32.store (i32.const 2068) (i32.load (i32.const 2304)))
              (i32.store (i32.const 2072) (i32.load (i32.const 2308)))))
      (i32.store (i32.const 2076) (i32.const 2))  ;; facts
      (i32.store (i32.const 2080) (i32.load (i32.const 2072)))  ;; prose-chars (ASCII labels)
      (i32.store (i32.const 2084) (i32.const 0))  ;; skipped
      (i32.store (i32.const 2088) (i32.const 0)) (i32.store (i32.const 2092) (i32.const 0))
      (if (i32.eqz (i32.load8_u (i32.const 2320)))
        (then (i32.store (i32.const 2088) (i32.load (i32.const 2324)))
              (i32.store (i32.const 2092) (i32.load (i32.const 2328)))))
      (i32.const 2048)))
  (core instance $main (instantiate $main
    (with "libc" (instance $libc))
    (with "host" (instance (export "list" (func $list)) (export "read" (func $read)) (export "label" (func $label))))))

  (func $describe (result $manifest) (canon lift (core func $main "describe")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (func $parse (param "subject" $input) (param "options" $options) (result (result (list u8) (error string)))
    (canon lift (core func $main "parse") (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (func $assemble (param "partials" (list (list u8))) (param "options" $options) (result (result $output (error string)))
    (canon lift (core func $main "assemble") (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (instance $preprocessor
    (export "manifest" (type $manifest)) (export "doc" (type $doc)) (export "input" (type $input))
    (export "node" (type $node)) (export "edge" (type $edge)) (export "report" (type $report))
    (export "output" (type $output))
    (export "describe" (func $describe)) (export "parse" (func $parse)) (export "assemble" (func $assemble)))
  (export "drsg:preprocess/preprocessor@1.0.0" (instance $preprocessor))
)
