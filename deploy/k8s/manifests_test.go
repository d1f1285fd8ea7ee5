package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rendered holds every object of the dev overlay, decoded strictly.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	pvcs        map[string]*corev1.PersistentVolumeClaim
	policies    map[string]*networkingv1.NetworkPolicy
	namespaces  map[string]*corev1.Namespace
	accounts    map[string]*corev1.ServiceAccount
	roles       map[string]*rbacv1.Role
	bindings    map[string]*rbacv1.RoleBinding
	raw         string
}

var agents = []string{"codex-a", "codex-b"}

func render(t *testing.T) *rendered {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatalf("the built kubectl renders the Kustomize overlay (make k8s-tools): %v", err)
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl"), "kustomize", "overlays/dev").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize overlays/dev: %v\n%s", err, out)
	}
	r := &rendered{
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		configMaps:  map[string]*corev1.ConfigMap{},
		pvcs:        map[string]*corev1.PersistentVolumeClaim{},
		policies:    map[string]*networkingv1.NetworkPolicy{},
		namespaces:  map[string]*corev1.Namespace{},
		accounts:    map[string]*corev1.ServiceAccount{},
		roles:       map[string]*rbacv1.Role{},
		bindings:    map[string]*rbacv1.RoleBinding{},
		raw:         string(out),
	}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		var meta struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &meta); err != nil {
			t.Fatal(err)
		}
		var name string
		switch meta.APIVersion + "/" + meta.Kind {
		case "apps/v1/Deployment":
			name = strictInto(t, js, r.deployments)
		case "v1/Service":
			name = strictInto(t, js, r.services)
		case "v1/ConfigMap":
			name = strictInto(t, js, r.configMaps)
		case "v1/PersistentVolumeClaim":
			name = strictInto(t, js, r.pvcs)
		case "networking.k8s.io/v1/NetworkPolicy":
			name = strictInto(t, js, r.policies)
		case "v1/Namespace":
			name = strictInto(t, js, r.namespaces)
		case "v1/ServiceAccount":
			name = strictInto(t, js, r.accounts)
		case "rbac.authorization.k8s.io/v1/Role":
			name = strictInto(t, js, r.roles)
		case "rbac.authorization.k8s.io/v1/RoleBinding":
			name = strictInto(t, js, r.bindings)
		default:
			t.Fatalf("object %d: unexpected %s %s", i, meta.APIVersion, meta.Kind)
		}
		if name == "" {
			t.Fatalf("object %d (%s) has no name", i, meta.Kind)
		}
	}
	return r
}

// strictInto decodes js into a new T, failing on any unknown field, and
// stores it under its name.
func strictInto[T any, PT interface {
	*T
	GetName() string
}](t *testing.T, js []byte, into map[string]PT) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	obj := PT(new(T))
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, js)
	}
	if _, dup := into[obj.GetName()]; dup {
		t.Fatalf("duplicate object %q", obj.GetName())
	}
	into[obj.GetName()] = obj
	return obj.GetName()
}

func container(t *testing.T, d *appsv1.Deployment, name string) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("%s: no container %q", d.Name, name)
	return nil
}

func checkHardened(t *testing.T, where string, c *corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("%s/%s: no securityContext", where, c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s/%s: readOnlyRootFilesystem must be true", where, c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s/%s: allowPrivilegeEscalation must be false", where, c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s/%s: capabilities must drop ALL and add none", where, c.Name)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Errorf("%s/%s: liveness and readiness probes required", where, c.Name)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[res]; !ok {
			t.Errorf("%s/%s: resources.requests.%s missing", where, c.Name, res)
		}
		if _, ok := c.Resources.Limits[res]; !ok {
			t.Errorf("%s/%s: resources.limits.%s missing", where, c.Name, res)
		}
	}
	if !strings.Contains(c.Image, ":") || strings.HasSuffix(c.Image, ":latest") {
		t.Errorf("%s/%s: image %q must carry a pinned tag", where, c.Name, c.Image)
	}
	for _, e := range c.Env {
		if e.Value != "" && looksSecret(e.Name) {
			t.Errorf("%s/%s: env %s holds a literal secret; use secretKeyRef", where, c.Name, e.Name)
		}
	}
}

func looksSecret(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "KEY") || strings.Contains(n, "TOKEN") || strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func TestAgentDeployments(t *testing.T) {
	r := render(t)
	for _, a := range agents {
		t.Run(a, func(t *testing.T) {
			d := r.deployments[a+"-agent"]
			if d == nil {
				t.Fatalf("no Deployment %s-agent", a)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
				t.Errorf("replicas must be 1 (RWO volumes)")
			}
			if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("strategy must be Recreate, got %q", d.Spec.Strategy.Type)
			}
			if got := d.Spec.Selector.MatchLabels["agent-workspace.dev/agent-id"]; got != a {
				t.Errorf("selector must pin the agent id, got %q", got)
			}
			pod := d.Spec.Template.Spec
			psc := pod.SecurityContext
			if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 1000 || psc.RunAsGroup == nil || *psc.RunAsGroup != 1000 ||
				psc.FSGroup == nil || *psc.FSGroup != 1000 || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Errorf("pod securityContext must be runAsUser/runAsGroup/fsGroup 1000 and runAsNonRoot")
			}
			if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod seccompProfile must be RuntimeDefault")
			}
			checkAnnotations(t, d)
			claims := map[string]string{}
			for _, v := range pod.Volumes {
				if v.PersistentVolumeClaim != nil {
					claims[v.Name] = v.PersistentVolumeClaim.ClaimName
				}
			}
			for _, cn := range []string{"codex-app-server", "agent-sidecar"} {
				c := container(t, d, cn)
				checkHardened(t, d.Name, c)
				if mountPath(c, "projects") != "/data/projects" || mountPath(c, "codex-home") != "/home/node/.codex" {
					t.Errorf("%s must mount projects at /data/projects and codex-home at /home/node/.codex", cn)
				}
			}
			for vol, want := range map[string]string{"projects": a + "-projects", "codex-home": a + "-codex-home"} {
				if claims[vol] != want {
					t.Errorf("volume %s must use claim %s, got %q", vol, want, claims[vol])
				}
				pvc := r.pvcs[want]
				if pvc == nil {
					t.Fatalf("no PersistentVolumeClaim %s", want)
				}
				if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
					t.Errorf("%s must be ReadWriteOnce", want)
				}
			}
			sc := container(t, d, "agent-sidecar")
			if u := sc.SecurityContext.RunAsUser; u != nil && *u != 1000 {
				t.Errorf("sidecar must run as 1000")
			}
			cfgVol := ""
			for _, v := range pod.Volumes {
				if v.Name == "sidecar-config" && v.ConfigMap != nil {
					cfgVol = v.ConfigMap.Name
				}
			}
			cm := r.configMaps[cfgVol]
			if cm == nil || !strings.Contains(cm.Data["sidecar.yaml"], "projectsRootDir: /data/projects") {
				t.Errorf("sidecar ConfigMap %q missing or without projectsRootDir", cfgVol)
			}
			// Issue 23: the sidecar's mutual-TLS Secret is the pod's only
			// Secret volume, named for this agent, mounted read-only into
			// agent-sidecar and into no other container.
			for _, v := range pod.Volumes {
				if v.Secret != nil && v.Name != "sidecar-tls" {
					t.Errorf("agent pods need no Secret volume besides sidecar-tls, found %s", v.Name)
				}
				if v.Name == "sidecar-tls" && (v.Secret == nil || v.Secret.SecretName != a+"-sidecar-tls") {
					t.Errorf("volume sidecar-tls must be the Secret %s-sidecar-tls, got %+v", a, v.VolumeSource)
				}
			}
			if pod.ShareProcessNamespace != nil && *pod.ShareProcessNamespace {
				t.Errorf("shareProcessNamespace would let the agent read the sidecar's key through /proc")
			}
			for _, c := range pod.Containers {
				for _, m := range c.VolumeMounts {
					if m.Name != "sidecar-tls" {
						continue
					}
					if c.Name != "agent-sidecar" {
						t.Errorf("container %s mounts the sidecar's TLS Secret", c.Name)
					} else if !m.ReadOnly || m.MountPath != "/etc/agent-sidecar/tls" {
						t.Errorf("agent-sidecar must mount sidecar-tls read-only at /etc/agent-sidecar/tls, got %+v", m)
					}
				}
			}
			if mountPath(sc, "sidecar-tls") == "" {
				t.Errorf("agent-sidecar does not mount its TLS Secret")
			}
			for _, key := range []string{"certFile: /etc/agent-sidecar/tls/tls.crt", "keyFile: /etc/agent-sidecar/tls/tls.key", "clientCAFile: /etc/agent-sidecar/tls/ca.crt"} {
				if !strings.Contains(cm.Data["sidecar.yaml"], key) {
					t.Errorf("sidecar.yaml lacks tls %s", key)
				}
			}
			app := container(t, d, "codex-app-server")
			found := false
			for _, e := range app.Env {
				if e.Name == "OPENAI_API_KEY" {
					found = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Value == ""
				}
			}
			if !found {
				t.Errorf("OPENAI_API_KEY must come from a secretKeyRef")
			}
		})
	}
}

func checkAnnotations(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ann := d.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] == "" || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: pod template needs Prometheus scrape annotations, got %v", d.Name, ann)
	}
}

func TestSidecarServicesAndNetworkPolicy(t *testing.T) {
	r := render(t)
	for _, a := range agents {
		t.Run(a, func(t *testing.T) {
			svc := r.services[a+"-sidecar"]
			if svc == nil {
				t.Fatalf("no Service %s-sidecar", a)
			}
			if svc.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("sidecar Service must be ClusterIP, got %q", svc.Spec.Type)
			}
			var ports []int32
			for _, p := range svc.Spec.Ports {
				ports = append(ports, p.Port)
			}
			slices.Sort(ports)
			if !slices.Equal(ports, []int32{9091, 9092}) {
				t.Errorf("sidecar Service ports = %v, want gRPC 9091 and WebDAV 9092", ports)
			}
			if svc.Spec.Selector["agent-workspace.dev/agent-id"] != a {
				t.Errorf("sidecar Service must select only %s's pod: %v", a, svc.Spec.Selector)
			}
			np := r.policies[a+"-agent"]
			if np == nil {
				t.Fatalf("no NetworkPolicy %s-agent", a)
			}
			if np.Spec.PodSelector.MatchLabels["agent-workspace.dev/agent-id"] != a {
				t.Errorf("NetworkPolicy must select %s's pod", a)
			}
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				t.Errorf("NetworkPolicy must restrict Ingress")
			}
			// Every rule that opens 9091 or 9092 admits only the gateway's pods.
			opened := map[int32]bool{}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					port := p.Port.IntVal
					if port != 9091 && port != 9092 {
						continue
					}
					opened[port] = true
					if len(rule.From) == 0 {
						t.Errorf("port %d open to everyone", port)
					}
					for _, peer := range rule.From {
						if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil ||
							len(peer.PodSelector.MatchLabels) != 1 || peer.PodSelector.MatchLabels["app.kubernetes.io/name"] != "agent-gateway" {
							t.Errorf("port %d admits more than the gateway pods: %+v", port, peer)
						}
					}
				}
				if len(rule.Ports) == 0 {
					t.Errorf("an ingress rule without ports opens every port")
				}
			}
			if !opened[9091] || !opened[9092] {
				t.Errorf("gateway must be admitted to 9091 and 9092")
			}
			gw := r.deployments["agent-gateway"]
			if gw == nil || gw.Spec.Template.Labels["app.kubernetes.io/name"] != "agent-gateway" {
				t.Errorf("gateway pods must carry app.kubernetes.io/name=agent-gateway (the NetworkPolicy admits them by it)")
			}
		})
	}
}

func TestGateway(t *testing.T) {
	r := render(t)
	d := r.deployments["agent-gateway"]
	if d == nil {
		t.Fatal("no Deployment agent-gateway")
	}
	checkAnnotations(t, d)
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("gateway must run as non-root")
	}
	checkHardened(t, d.Name, container(t, d, "agent-gateway"))
	if r.services["agent-gateway"] == nil {
		t.Errorf("no Service agent-gateway")
	}
	var cfg, tokensSecret, tlsSecret string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			cfg = v.ConfigMap.Name
		}
		if v.Secret != nil && v.Name == "tokens" {
			tokensSecret = v.Secret.SecretName
		}
		if v.Secret != nil && v.Name == "sidecar-tls" {
			tlsSecret = v.Secret.SecretName
		}
	}
	if tlsSecret != "gateway-sidecar-tls" {
		t.Errorf("the gateway's client certificate must come from the Secret gateway-sidecar-tls, got %q", tlsSecret)
	}
	if m := mountPath(container(t, d, "agent-gateway"), "sidecar-tls"); m != "/etc/agent-gateway/sidecar-tls" {
		t.Errorf("agent-gateway must mount sidecar-tls at /etc/agent-gateway/sidecar-tls, got %q", m)
	}
	if tokensSecret == "" {
		t.Errorf("gateway tokens must come from a referenced Secret volume")
	}
	cm := r.configMaps[cfg]
	if cm == nil {
		t.Fatalf("gateway ConfigMap %q not rendered", cfg)
	}
	var gc struct {
		AgentRuntime struct {
			DefaultAgent string `json:"defaultAgent"`
			Agents       map[string]struct {
				Sidecar struct {
					Endpoint    string `json:"endpoint"`
					DavEndpoint string `json:"davEndpoint"`
				} `json:"sidecar"`
			} `json:"agents"`
		} `json:"agentRuntime"`
		Auth map[string]any `json:"auth"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["gateway.yaml"]), &gc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"certFile: /etc/agent-gateway/sidecar-tls/tls.crt", "keyFile: /etc/agent-gateway/sidecar-tls/tls.key", "caFile: /etc/agent-gateway/sidecar-tls/ca.crt"} {
		if !strings.Contains(cm.Data["gateway.yaml"], key) {
			t.Errorf("gateway.yaml lacks agentRuntime.sidecarTLS %s", key)
		}
	}
	// The agents are discovered (TestGatewayDiscoveryRBAC), not listed:
	// each one's sidecar Service exists with the ports discovery looks for.
	if len(gc.AgentRuntime.Agents) != 0 {
		t.Errorf("the dev gateway config lists static agents: %v", gc.AgentRuntime.Agents)
	}
	for _, a := range agents {
		svc := r.services[a+"-sidecar"]
		if svc == nil {
			t.Errorf("agent %s has no sidecar Service", a)
			continue
		}
		names := map[string]int32{}
		for _, p := range svc.Spec.Ports {
			names[p.Name] = p.Port
		}
		if names["grpc"] != 9091 || names["webdav"] != 9092 {
			t.Errorf("agent %s's sidecar Service ports %v: discovery needs grpc (9091) and webdav (9092)", a, names)
		}
	}
	if _, ok := gc.Auth["tokens"]; ok {
		t.Errorf("token hashes must not sit in a ConfigMap; use auth.tokensFile from the Secret")
	}
}

// selects reports whether every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestGatewaySignOuts (issues 14 and 26): the replicas share sign-outs
// through the ConfigMap agent-gateway-signouts, which the overlay creates;
// their config names it; the gateway's Role may get, list, watch and
// update that one ConfigMap and nothing else (no create); their session
// key comes from a Secret; the peer Service is gone and the NetworkPolicy
// no longer lets gateway pods reach each other.
func TestGatewaySignOuts(t *testing.T) {
	r := render(t)
	d := r.deployments["agent-gateway"]
	if d == nil {
		t.Fatal("no Deployment agent-gateway")
	}
	pod := d.Spec.Template
	if _, ok := r.services["agent-gateway-peers"]; ok {
		t.Error("the peer Service agent-gateway-peers is still rendered")
	}
	if r.configMaps["agent-gateway-signouts"] == nil {
		t.Fatal("no ConfigMap agent-gateway-signouts: the gateway cannot create it")
	}
	role := r.roles["agent-gateway-signouts"]
	if role == nil || len(role.Rules) != 1 {
		t.Fatalf("want the Role agent-gateway-signouts with one rule, got %+v", role)
	}
	rule := role.Rules[0]
	if !slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.Resources, []string{"configmaps"}) ||
		!slices.Equal(rule.ResourceNames, []string{"agent-gateway-signouts"}) ||
		!slices.Equal(rule.Verbs, []string{"get", "list", "watch", "update"}) {
		t.Errorf("the Role must allow only get, list, watch, update on the ConfigMap agent-gateway-signouts: %+v", rule)
	}
	b := r.bindings["agent-gateway-signouts"]
	sa := pod.Spec.ServiceAccountName
	if b == nil || b.RoleRef.Kind != "Role" || b.RoleRef.Name != role.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != sa || sa == "" || r.accounts[sa] == nil {
		t.Fatalf("the RoleBinding must bind the Role to the gateway pod's service account only: %+v (pod runs as %q)", b, sa)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || !*pod.Spec.AutomountServiceAccountToken {
		t.Error("the gateway pod does not mount its service-account token: its in-cluster client needs it")
	}
	c := container(t, d, "agent-gateway")

	var cfgMap string
	mounts := map[string]string{} // volume -> mount path
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	secretPaths := []string{}
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			cfgMap = v.ConfigMap.Name
		}
		if v.Secret != nil && mounts[v.Name] != "" {
			secretPaths = append(secretPaths, mounts[v.Name]+"/")
		}
	}
	var gc struct {
		MetricsServer struct {
			Address string `json:"address"`
		} `json:"metricsServer"`
		Auth struct {
			Session struct {
				Keys             []string `json:"keys"`
				KeysFile         string   `json:"keysFile"`
				Peers            []string `json:"peers"`
				SignOutConfigMap string   `json:"signOutConfigMap"`
			} `json:"session"`
		} `json:"auth"`
	}
	cm := r.configMaps[cfgMap]
	if cm == nil {
		t.Fatalf("gateway ConfigMap %q not rendered", cfgMap)
	}
	if err := yaml.Unmarshal([]byte(cm.Data["gateway.yaml"]), &gc); err != nil {
		t.Fatal(err)
	}
	if gc.Auth.Session.Peers != nil {
		t.Errorf("auth.session.peers (removed) is set: %v", gc.Auth.Session.Peers)
	}
	if gc.Auth.Session.SignOutConfigMap != "agent-gateway-signouts" {
		t.Errorf("auth.session.signOutConfigMap = %q, want agent-gateway-signouts", gc.Auth.Session.SignOutConfigMap)
	}
	if len(gc.Auth.Session.Keys) != 0 {
		t.Errorf("session keys must not sit in a ConfigMap; use auth.session.keysFile from a Secret")
	}
	inSecret := false
	for _, p := range secretPaths {
		inSecret = inSecret || strings.HasPrefix(gc.Auth.Session.KeysFile, p)
	}
	if !inSecret {
		t.Errorf("auth.session.keysFile %q is not in a mounted Secret (%v): replicas must share the key", gc.Auth.Session.KeysFile, secretPaths)
	}

	np := r.policies["agent-gateway"]
	if np == nil {
		t.Fatal("no NetworkPolicy agent-gateway")
	}
	if !selects(np.Spec.PodSelector.MatchLabels, pod.Labels) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Fatalf("NetworkPolicy agent-gateway must restrict Ingress of the gateway pods")
	}
	open := map[int32]bool{}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("an ingress rule without ports opens every port")
		}
		for _, p := range rule.Ports {
			port := p.Port.IntVal
			if len(rule.From) == 0 {
				open[port] = true
				continue
			}
			if port != 9090 {
				continue
			}
			for _, from := range rule.From {
				if from.NamespaceSelector == nil || from.PodSelector != nil || from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
					t.Errorf("port 9090 admits more than the monitoring namespace: %+v", from)
				}
			}
		}
	}
	if !open[8080] {
		t.Errorf("the gateway's port 8080 must stay open (it is the door for people)")
	}
	if open[9090] {
		t.Errorf("port 9090 (metrics) open to everyone")
	}
}

// TestNoSecretsCommitted: nothing that looks like a credential is rendered
// into a ConfigMap, and no Secret object is part of the manifests.
func TestNoSecretsCommitted(t *testing.T) {
	r := render(t)
	if strings.Contains(r.raw, "\nkind: Secret") {
		t.Errorf("manifests must reference Secrets, never contain them")
	}
	secretish := regexp.MustCompile(`(?i)(sk-[a-z0-9]{10,}|sha256:\s*"?[0-9a-f]{64}|OPENAI_API_KEY\s*[:=]\s*\S)`)
	for name, cm := range r.configMaps {
		for k, v := range cm.Data {
			if secretish.MatchString(v) {
				t.Errorf("ConfigMap %s key %s looks like it holds a secret", name, k)
			}
		}
	}
}

// TestDockerfiles checks the images statically (no Docker engine here):
// multi-stage, pinned base images, non-root, git in the sidecar, no secrets.
func TestDockerfiles(t *testing.T) {
	for file, wantUser := range map[string]string{"agent-sidecar.Dockerfile": "1000:1000", "agent-gateway.Dockerfile": "65532:65532"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "docker", file))
			if err != nil {
				t.Fatal(err)
			}
			var froms []string
			user := ""
			// ARG NAME=default before a FROM names a base image that a
			// machine without a registry overrides; its default must be pinned.
			argDefaults := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) < 2 {
					continue
				}
				switch strings.ToUpper(f[0]) {
				case "FROM":
					img := f[1]
					if strings.HasPrefix(img, "${") && strings.HasSuffix(img, "}") {
						def, ok := argDefaults[img[2:len(img)-1]]
						if !ok {
							t.Errorf("%s: FROM %s has no ARG default", file, img)
						}
						img = def
					}
					froms = append(froms, img)
				case "USER":
					user = f[1]
				case "ENV", "ARG":
					if k, v, ok := strings.Cut(f[1], "="); ok && strings.ToUpper(f[0]) == "ARG" && len(froms) == 0 {
						argDefaults[k] = v
					}
					if looksSecret(strings.SplitN(f[1], "=", 2)[0]) {
						t.Errorf("%s sets %s: secrets never go into images", file, f[1])
					}
				}
			}
			if len(froms) < 2 {
				t.Errorf("%s must be multi-stage, has %d FROM", file, len(froms))
			}
			for _, img := range froms {
				ref := strings.SplitN(img, "@", 2)[0]
				if i := strings.LastIndex(ref, ":"); i < 0 || strings.HasSuffix(ref, ":latest") || strings.Contains(ref[i:], "/") {
					t.Errorf("%s: base image %q is not pinned to a tag", file, img)
				}
			}
			if user != wantUser {
				t.Errorf("%s: final USER = %q, want %q", file, user, wantUser)
			}
			if file == "agent-sidecar.Dockerfile" && !strings.Contains(string(b), " git ") {
				t.Errorf("the sidecar image needs git (git init on Create Project)")
			}
			fmt.Fprintf(os.Stderr, "%s: bases %v, user %s\n", file, froms, user)
		})
	}
}

// Discovery (docs/discovery.md): the gateway's service account may only
// get, list and watch EndpointSlices in its namespace (a Role, never a
// ClusterRole); only its pod mounts a token; each sidecar Service carries
// the agent label its EndpointSlices inherit, and the app-server Services
// do not; the overlay's gateway config discovers instead of listing.
func TestGatewayDiscoveryRBAC(t *testing.T) {
	r := render(t)
	if strings.Contains(r.raw, "kind: ClusterRole") {
		t.Error("the overlay holds a ClusterRole or ClusterRoleBinding: discovery is namespaced")
	}
	role := r.roles["agent-gateway-discovery"]
	if role == nil || len(r.roles) != 2 || r.roles["agent-gateway-signouts"] == nil {
		t.Fatalf("want exactly the Roles agent-gateway-discovery and agent-gateway-signouts, got %d roles", len(r.roles))
	}
	if len(role.Rules) != 1 {
		t.Fatalf("the Role has %d rules, want one", len(role.Rules))
	}
	rule := role.Rules[0]
	if !slices.Equal(rule.APIGroups, []string{"discovery.k8s.io"}) || !slices.Equal(rule.Resources, []string{"endpointslices"}) ||
		!slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) || len(rule.ResourceNames) != 0 || len(rule.NonResourceURLs) != 0 {
		t.Errorf("the Role must allow only get, list, watch on discovery.k8s.io endpointslices: %+v", rule)
	}
	b := r.bindings["agent-gateway-discovery"]
	if b == nil || b.RoleRef.Kind != "Role" || b.RoleRef.Name != role.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != "agent-gateway" || b.Subjects[0].Namespace != role.Namespace {
		t.Fatalf("the RoleBinding must bind the Role to the gateway's service account only: %+v", b)
	}
	if sa := r.accounts["agent-gateway"]; sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("the agent-gateway ServiceAccount must exist and not mount its token by default")
	}
	for name, d := range r.deployments {
		spec := d.Spec.Template.Spec
		mounts := spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken
		if name == "agent-gateway" {
			if spec.ServiceAccountName != "agent-gateway" || !mounts {
				t.Errorf("the gateway must run as agent-gateway with its token mounted (serviceAccountName %q)", spec.ServiceAccountName)
			}
		} else if mounts || spec.ServiceAccountName != "" {
			t.Errorf("%s mounts a service account token or names an account", name)
		}
	}
	for _, a := range agents {
		if got := r.services[a+"-sidecar"].Labels["agentworkspace.io/agent-id"]; got != a {
			t.Errorf("%s-sidecar: agent label %q, want %q", a, got, a)
		}
		if _, ok := r.services[a+"-app-server"].Labels["agentworkspace.io/agent-id"]; ok {
			t.Errorf("%s-app-server carries the discovery label: its slices would be taken for a sidecar", a)
		}
	}
	cm := r.configMaps
	var gw string
	for name, c := range cm {
		if strings.HasPrefix(name, "gateway-config") {
			gw = c.Data["gateway.yaml"]
		}
	}
	if !regexp.MustCompile(`(?m)^  discovery:\n    enabled: true$`).MatchString(gw) || regexp.MustCompile(`(?m)^  agents:`).MatchString(gw) {
		t.Errorf("the dev gateway config must enable discovery and list no static agents:\n%s", gw)
	}
}
