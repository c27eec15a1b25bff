;; clocks — imports the WASI clocks and random interfaces the host stands in for; parse answers 24 bytes:
;; get-random-bytes(8), wall-clock now().seconds (u64 LE), monotonic-clock now() (u64 LE). The host's
;; answers are fixed: b"drsgdrsg", 0, 0 — the same on every run and machine.
(component
  (type $manifest (record (field "name" string) (field "version" string)
                          (field "extensions" (list string)) (field "logo" (option string))))
  (type $doc (record (field "name" string) (field "bytes" (list u8))))
  (type $input (variant (case "document" $doc) (case "files" (list string))))
  (type $options (list (tuple string string)))
  (import "wasi:random/random@0.2.3" (instance $random
    (export "get-random-bytes" (func (param "len" u64) (result (list u8))))))
  (import "wasi:clocks/wall-clock@0.2.0" (instance $wall
    (type $datetime (record (field "seconds" u64) (field "nanoseconds" u32)))
    (export "datetime" (type $dt (eq $datetime)))
    (export "now" (func (result $dt)))))
  (import "wasi:clocks/monotonic-clock@0.2.0" (instance $mono
    (export "now" (func (result u64)))))
  (core module $libc
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)  ;; bump, 8-aligned, never frees
      (global.set $heap (i32.and (i32.add (global.get $heap) (i32.const 7)) (i32.const -8)))
      (global.set $heap (i32.add (global.get $heap) (local.get 3)))
      (i32.sub (global.get $heap) (local.get 3))))
  (core instance $libc (instantiate $libc))
  (core func $random (canon lower (func $random "get-random-bytes")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (core func $wall (canon lower (func $wall "now") (memory (core memory $libc "memory"))))
  (core func $mono (canon lower (func $mono "now")))
  (core module $m
    (import "libc" "memory" (memory 1))
    (import "wasi" "random" (func $random (param i64 i32)))
    (import "wasi" "wall" (func $wall (param i32)))
    (import "wasi" "mono" (func $mono (result i64)))
    (data (i32.const 0) "clck1.0.0.clck")
    ;; manifest at 256: name (0,4) version (4,5) extensions (512,1) logo none; [".clck"] at 512
    (data (i32.const 256) "\00\00\00\00\04\00\00\00\04\00\00\00\05\00\00\00\00\02\00\00\01\00\00\00\00")
    (data (i32.const 512) "\09\00\00\00\05\00\00\00")
    (func (export "describe") (result i32) (i32.const 256))
    (func (export "parse") (param i32 i32 i32 i32 i32 i32 i32) (result i32)
      (call $random (i64.const 8) (i32.const 600))   ;; list<u8> at 600 = (ptr, len)
      (memory.copy (i32.const 2048) (i32.load (i32.const 600)) (i32.const 8))
      (call $wall (i32.const 640))                   ;; datetime at 640 = (seconds u64, nanoseconds u32)
      (i64.store (i32.const 2056) (i64.load (i32.const 640)))
      (i64.store (i32.const 2064) (call $mono))
      (i32.store8 (i32.const 1024) (i32.const 0))
      (i32.store (i32.const 1028) (i32.const 2048))
      (i32.store (i32.const 1032) (i32.const 24))
      (i32.const 1024)))
  (core instance $i (instantiate $m (with "libc" (instance $libc))
    (with "wasi" (instance (export "random" (func $random)) (export "wall" (func $wall)) (export "mono" (func $mono))))))
  (func $describe (result $manifest) (canon lift (core func $i "describe")
    (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (func $parse (param "subject" $input) (param "options" $options) (result (result (list u8) (error string)))
    (canon lift (core func $i "parse") (memory (core memory $libc "memory")) (realloc (core func $libc "realloc"))))
  (instance $preprocessor
    (export "manifest" (type $manifest)) (export "doc" (type $doc)) (export "input" (type $input))
    (export "describe" (func $describe)) (export "parse" (func $parse)) (export "assemble" (func $parse)))
  (export "drsg:preprocess/preprocessor@1.0.0" (instance $preprocessor))
)
