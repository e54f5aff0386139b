//go:build !linux

package filewatch

type instance struct{}

func (h *Hub) start() (*instance, error) { return nil, ErrUnsupported }

func (*instance) stop() {}
