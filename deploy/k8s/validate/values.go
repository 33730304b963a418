package validate

import (
	"bytes"
	"embed"
	"fmt"
	"maps"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// ChartVersion is the Zero to JupyterHub chart whose values schema and
// defaults are vendored in chart/ (see chart/README.md for their source).
const ChartVersion = "4.2.0"

//go:embed chart/values.schema.yaml chart/values.yaml
var chart embed.FS

// CheckValues reports whether values, the YAML text of a values file for the
// Zero to JupyterHub chart, is accepted by the chart's values schema once
// merged over the chart's defaults, as helm merges and validates them before
// it renders anything. A misspelt or misplaced key is an error, since the
// schema allows no key it does not describe.
func CheckValues(values []byte) error {
	schema, err := compileSchema()
	if err != nil {
		return err
	}
	defaults, err := decodeYAML("chart/values.yaml", mustRead("chart/values.yaml"))
	if err != nil {
		return err
	}
	user, err := decodeYAML("values", values)
	if err != nil {
		return err
	}
	userMap, ok := user.(map[string]any)
	if !ok && user != nil {
		return fmt.Errorf("validate: values is a %T, want a mapping of the chart's keys", user)
	}
	merged := coalesce(defaults.(map[string]any), userMap)
	if err := schema.Validate(merged); err != nil {
		return fmt.Errorf("validate: the values do not match chart jupyterhub %s's schema: %w", ChartVersion, err)
	}
	return nil
}

func compileSchema() (*jsonschema.Schema, error) {
	doc, err := decodeYAML("chart/values.schema.yaml", mustRead("chart/values.schema.yaml"))
	if err != nil {
		return nil, err
	}
	const url = "file:///z2jh/values.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("validate: chart schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("validate: chart schema: %w", err)
	}
	return s, nil
}

// decodeYAML converts YAML to the JSON values the validator works on
// (numbers kept exact); a key given twice is an error, as it would hide one
// of the two settings.
func decodeYAML(name string, data []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", name, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, fmt.Errorf("validate: %s: %w", name, err)
	}
	return v, nil
}

func mustRead(name string) []byte {
	data, err := chart.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return data
}

// coalesce merges values over defaults as helm does: mappings merge key by
// key, anything else (lists included) replaces the default, and a null
// removes the default's key.
func coalesce(defaults, values map[string]any) map[string]any {
	out := maps.Clone(defaults)
	for key, v := range values {
		if v == nil {
			delete(out, key)
			continue
		}
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := out[key].(map[string]any); ok {
				out[key] = coalesce(dm, vm)
				continue
			}
		}
		out[key] = v
	}
	return out
}
