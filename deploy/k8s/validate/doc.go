// Package validate checks the Kubernetes deployment of deploy/k8s offline.
//
// The grading Job and the init container in values.yaml are decoded strictly
// (an unknown or misspelt field is an error) into the k8s.io/api types, and
// the settings the course relies on are checked. values.yaml as a whole is
// merged over the Zero to JupyterHub chart's defaults and validated against
// the chart's values schema (CheckValues), both vendored from a pinned chart
// version in chart/, as helm would validate it before installing.
package validate
