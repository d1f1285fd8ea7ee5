//go:build k8stier

package tier

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"runtime"
	"time"
)

// writeImageTar writes a docker-archive (what docker save writes and ctr
// images import reads) holding one layer: the static binary at /standin
// and an empty /tmp. It stands in for images no registry can give here.
func writeImageTar(path, binary string, tags, entrypoint []string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	lt := tar.NewWriter(&layer)
	mod := time.Unix(0, 0)
	if err := lt.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: mod}); err != nil {
		return err
	}
	if err := lt.WriteHeader(&tar.Header{Name: "standin", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin)), ModTime: mod}); err != nil {
		return err
	}
	if _, err := lt.Write(bin); err != nil {
		return err
	}
	if err := lt.Close(); err != nil {
		return err
	}
	diff := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": entrypoint, "User": "65535:65535"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}},
		"history":      []map[string]string{{"created_by": "deploy/k8s/tier (standin)"}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(config)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerName := hex.EncodeToString(diff[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": tags, "Layers": []string{layerName}}})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{cfgName, config}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if err := w.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data)), ModTime: mod}); err != nil {
			return err
		}
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}
