//go:build k8stier

package tier

func (n *node) deploy()     {}
func (n *node) acceptance() {}
