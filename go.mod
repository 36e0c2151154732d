module github.com/lily-engine/lily

go 1.26.8

require (
	github.com/ebitengine/purego v0.11.3
	github.com/spf13/pflag v1.1.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/text v0.44.0
	pgregory.net/rapid v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
