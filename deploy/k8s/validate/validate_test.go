package validate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestGradeJob(t *testing.T) {
	var job batchv1.Job
	decodeStrict(t, "../grade-job.yaml", &job)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("grade-job.yaml is %s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("the grading Job must be Indexed: each pod grades the shard of its JOB_COMPLETION_INDEX")
	}
	if spec.Completions == nil || *spec.Completions < 1 {
		t.Fatal("the grading Job needs completions >= 1")
	}
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (retries are counted per index)", spec.Template.Spec.RestartPolicy)
	}
	containers := spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("%d containers, want 1", len(containers))
	}
	// grader batch --shard divides by COMPLETIONS: it must be the Job's own count, or
	// some submissions would be graded twice and others never.
	count := ""
	for _, env := range containers[0].Env {
		if env.Name == "COMPLETIONS" {
			count = env.Value
		}
	}
	if count != strconv.Itoa(int(*spec.Completions)) {
		t.Errorf("COMPLETIONS=%q, want the Job's completions %d", count, *spec.Completions)
	}
	// The grader runs as root so that each test runs as a uid of its own
	// that owns nothing; root holds only the capabilities that takes.
	if sc := spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Error("the grading pods must run the grader as root (uid 0), which runs each test as a uid of its own")
	}
	sc := containers[0].SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) {
		t.Error("the grading container must set allowPrivilegeEscalation: false and never be privileged")
	}
	if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Error("the grading container must drop ALL capabilities and add back only what the grader needs")
	} else {
		needed := map[corev1.Capability]bool{"SETUID": true, "SETGID": true, "KILL": true, "DAC_OVERRIDE": true, "DAC_READ_SEARCH": true, "CHOWN": true, "FOWNER": true}
		for _, c := range sc.Capabilities.Add {
			if !needed[c] {
				t.Errorf("the grading container adds %s, which the grader does not need", c)
			}
		}
	}
	if containers[0].Resources.Limits.Memory().IsZero() {
		t.Error("the grading container needs a memory limit")
	}
}

// TestValuesInitContainer decodes the Zero to JupyterHub values' init
// container, the one raw Kubernetes object in values.yaml, strictly.
func TestValuesInitContainer(t *testing.T) {
	data, err := os.ReadFile("../values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The chart's own keys are not Kubernetes types: walk to the init
	// containers generically, then decode each strictly.
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	singleuser, _ := values["singleuser"].(map[string]any)
	inits, _ := singleuser["initContainers"].([]any)
	if len(inits) != 1 {
		t.Fatalf("%d init containers, want 1 (the course copy)", len(inits))
	}
	raw, err := yaml.Marshal(inits[0])
	if err != nil {
		t.Fatal(err)
	}
	var init corev1.Container
	if err := yaml.UnmarshalStrict(raw, &init); err != nil {
		t.Fatalf("values.yaml singleuser.initContainers[0]: %v", err)
	}
	if len(init.VolumeMounts) != 1 || init.VolumeMounts[0].Name != "home" {
		t.Errorf("the init container must mount the chart's home volume, got %+v", init.VolumeMounts)
	}
}

// TestValuesJupyterLab checks that each student's server opens JupyterLab
// (the image's jupyterhub-singleuser serves it) at the course's notebooks in
// the persistent volume, where the init container copies the course.
func TestValuesJupyterLab(t *testing.T) {
	var values struct {
		Hub struct {
			Config struct {
				KubeSpawner struct {
					NotebookDir string `json:"notebook_dir"`
				} `json:"KubeSpawner"`
			} `json:"config"`
		} `json:"hub"`
		Singleuser struct {
			Cmd        string `json:"cmd"`
			DefaultURL string `json:"defaultUrl"`
		} `json:"singleuser"`
	}
	data, err := os.ReadFile("../values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if values.Singleuser.Cmd != "jupyterhub-singleuser" {
		t.Errorf("singleuser.cmd %q, want jupyterhub-singleuser", values.Singleuser.Cmd)
	}
	if want := "/lab/tree/course/notebooks"; values.Singleuser.DefaultURL != want {
		t.Errorf("singleuser.defaultUrl %q, want %q: JupyterLab, at the course copied into the volume", values.Singleuser.DefaultURL, want)
	}
	if dir := values.Hub.Config.KubeSpawner.NotebookDir; dir != "/home/jovyan/work" {
		t.Errorf("KubeSpawner.notebook_dir %q, want the persistent volume /home/jovyan/work", dir)
	}
}

// TestValuesSchema checks values.yaml against the chart's own values schema,
// and that the check refuses what helm would refuse.
func TestValuesSchema(t *testing.T) {
	values, err := os.ReadFile("../values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckValues(values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"misspelt top-level key", "\ncull:\n", "\ncul:\n", "cul"},
		{"misspelt nested key", "    limit: 2G\n", "    limt: 2G\n", "limt"},
		{"misplaced key", "  defaultUrl: /lab/tree/course/notebooks\n", "  defaultUrl: /lab/tree/course/notebooks\n  timeout: 3600\n", "timeout"},
		{"wrong type", "  timeout: 3600\n", "  timeout: an hour\n", "/cull/timeout"},
		{"key given twice", "  every: 300\n", "  every: 300\n  every: 600\n", "every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Contains(values, []byte(tt.old)) {
				t.Fatalf("values.yaml no longer contains %q; update the test", tt.old)
			}
			bad := bytes.Replace(values, []byte(tt.old), []byte(tt.new), 1)
			err := CheckValues(bad)
			if err == nil {
				t.Fatalf("accepted values.yaml with %s", tt.name)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("the error does not name %q: %v", tt.want, err)
			}
		})
	}
}

func TestCoalesce(t *testing.T) {
	defaults := map[string]any{
		"a": map[string]any{"x": 1, "y": 2},
		"l": []any{1, 2},
		"d": "gone",
	}
	got := coalesce(defaults, map[string]any{
		"a": map[string]any{"y": 3, "z": 4},
		"l": []any{5},
		"d": nil,
	})
	want := map[string]any{
		"a": map[string]any{"x": 1, "y": 3, "z": 4},
		"l": []any{5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("coalesce = %v, want %v", got, want)
	}
	if defaults["d"] != "gone" {
		t.Error("coalesce changed the defaults")
	}
}

// TestValuesRefuseDummyLogin runs values.yaml's hub.extraConfig snippet as
// the chart's hub would, with z2jh's get_config over made-up values: the
// dummy authenticator starts no hub unless custom.demo is true.
func TestValuesRefuseDummyLogin(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	var values struct {
		Hub struct {
			ExtraConfig map[string]string `json:"extraConfig"`
		} `json:"hub"`
		Custom map[string]any `json:"custom"`
	}
	data, err := os.ReadFile("../values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	snippet, ok := values.Hub.ExtraConfig["gpumem-refuse-dummy"]
	if !ok {
		t.Fatal("values.yaml has no hub.extraConfig.gpumem-refuse-dummy")
	}
	if values.Custom["demo"] != false {
		t.Errorf("custom.demo is %v as shipped, want false", values.Custom["demo"])
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "snippet.py"), []byte(snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		login  string
		demo   string // Python literal
		refuse bool
	}{
		{"dummy", "False", true},
		{"dummy", "None", true},
		{"dummy", "'true'", true},
		{"dummyauthenticator.DummyAuthenticator", "False", true},
		{"dummy", "True", false},
		{"github", "False", false},
		{"oauthenticator.generic.GenericOAuthenticator", "False", false},
	}
	for _, c := range cases {
		z2jh := "def get_config(key, default=None):\n    return {'hub.config.JupyterHub.authenticator_class': '" + c.login + "', 'custom.demo': " + c.demo + "}.get(key, default)\n"
		if err := os.WriteFile(filepath.Join(dir, "z2jh.py"), []byte(z2jh), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(python, "snippet.py")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if c.refuse && (err == nil || !strings.Contains(string(out), "lets anyone log in as the admin")) {
			t.Errorf("%s with custom.demo=%s: started (%v, %s), want refused", c.login, c.demo, err, out)
		}
		if !c.refuse && err != nil {
			t.Errorf("%s with custom.demo=%s: refused: %v %s", c.login, c.demo, err, out)
		}
	}
}
