module cts.test/promparse

go 1.24.0

require (
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.67.5
)

require (
	github.com/kr/pretty v0.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
