module github.com/edgepose/posed

go 1.26

require (
	github.com/esimov/pigo v1.4.6 // indirect
	golang.org/x/tools v0.30.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
