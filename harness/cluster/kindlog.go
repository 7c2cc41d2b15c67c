package cluster

import (
	"context"
	"fmt"
	"log/slog"

	kindlog "sigs.k8s.io/kind/pkg/log"
)

// kindLogger sends kind's own messages to slog (V(0) as Info, deeper
// levels as Debug).
type kindLogger struct{ l *slog.Logger }

func (k kindLogger) Warn(m string)                        { k.l.Warn(m, "from", "kind") }
func (k kindLogger) Warnf(f string, a ...any)             { k.l.Warn(fmt.Sprintf(f, a...), "from", "kind") }
func (k kindLogger) Error(m string)                       { k.l.Error(m, "from", "kind") }
func (k kindLogger) Errorf(f string, a ...any)            { k.l.Error(fmt.Sprintf(f, a...), "from", "kind") }
func (k kindLogger) V(v kindlog.Level) kindlog.InfoLogger { return kindInfo{l: k.l, v: v} }

type kindInfo struct {
	l *slog.Logger
	v kindlog.Level
}

func (i kindInfo) level() slog.Level {
	if i.v <= 0 {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
func (i kindInfo) Info(m string)            { i.l.Log(context.Background(), i.level(), m, "from", "kind") }
func (i kindInfo) Infof(f string, a ...any) { i.Info(fmt.Sprintf(f, a...)) }
func (i kindInfo) Enabled() bool            { return i.l.Enabled(context.Background(), i.level()) }
