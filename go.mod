module github.com/lllm-go/lllm

go 1.24

require github.com/google/jsonschema-go v0.4.3
