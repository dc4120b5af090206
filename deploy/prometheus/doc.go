// Package prometheus holds no code. Its tests check the alert rules beside
// it: promtool validates alerts.yml and runs its unit tests
// (alerts_test.yml), every metric a rule uses must be one the ingester
// exports, and Grafana's alert provisioning
// (dashboards/provisioning/alerting.yaml) must be the rules' translation:
// `go test ./deploy/prometheus -update` regenerates it.
package prometheus
