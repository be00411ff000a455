module github.com/edgepose/posed

go 1.26.0

require (
	github.com/blackjack/webcam v0.6.1
	github.com/esimov/pigo v1.4.6
	golang.org/x/sys v0.49.0
	gonum.org/v1/gonum v0.17.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/tools v0.30.0 // indirect
