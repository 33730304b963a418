// Package validate checks the Kubernetes manifests of deploy/k8s offline: each
// is decoded strictly (an unknown or misspelt field is an error) into the
// k8s.io/api types, and the settings the course relies on are checked.
package validate
