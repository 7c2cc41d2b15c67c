// Package lbimage carries the Dockerfile of the cloud LB container (built by
// harness/lb.StartKind FROM a local image, never pulled).
package lbimage

import _ "embed"

// Dockerfile builds the LB image; it takes the base image as build argument BASE.
//
//go:embed Dockerfile
var Dockerfile []byte
