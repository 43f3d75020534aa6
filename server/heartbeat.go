package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"pasarela/db"
	"pasarela/jobs"
)

// maxHeartbeatBody bounds an agent's report (a few numbers).
const maxHeartbeatBody = 4 << 10

// Heartbeats are written with group commit (groupcommit.go): one statement
// for all those waiting. One writer: two batches at once could lock the same
// servers' rows in opposite orders.
const (
	beatWriters  = 1
	beatMaxBatch = 256
	beatLinger   = 500 * time.Microsecond
)

type agentBeat struct {
	hash []byte
	h    db.Heartbeat
}

func newBeatWriter(s *Server) *groupCommit[agentBeat, bool] {
	return newGroupCommit("heartbeats", beatWriters, beatMaxBatch, beatLinger, s.log,
		func(ctx context.Context, beats []agentBeat) ([]bool, error) {
			hashes, hs := make([][]byte, len(beats)), make([]db.Heartbeat, len(beats))
			for i, b := range beats {
				hashes[i], hs[i] = b.hash, b.h
			}
			stored, err := s.store.RecordHeartbeatsQuietly(ctx, s.pool, hashes, hs)
			if db.IsMissingPartition(err) {
				// The worker that makes the coming days' partitions has not
				// run for days: make them here rather than lose heartbeats.
				if err = s.store.EnsureMetricPartitions(ctx, s.db); err == nil {
					stored, err = s.store.RecordHeartbeatsQuietly(ctx, s.pool, hashes, hs)
				}
			}
			return stored, err
		})
}

// receiveHeartbeat is POST /api/agente/heartbeat (CONTRACT §5): the server's
// token, six figures, 204. Most heartbeats are one statement on pgx; one that
// brings a server back or crosses its disk threshold takes the locked path
// that emits the event in the same transaction.
func (s *Server) receiveHeartbeat(c *fiber.Ctx) error {
	auth := c.Get(fiber.HeaderAuthorization)
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="pasarela-agent"`)
		return fiber.NewError(fiber.StatusUnauthorized, "Falta Authorization: Bearer <token del servidor>.")
	}
	ctx := c.UserContext()
	hash := hashToken(strings.TrimSpace(token))
	h, problems, err := readHeartbeat(c)
	if err != nil || len(problems) > 0 {
		// A bad body with a bad token is told about the token.
		if _, terr := s.store.ServerByToken(ctx, s.pool, hash); errors.Is(terr, db.ErrNotFound) {
			return badAgentToken(c)
		}
		if err != nil {
			return err
		}
		return problems.respond(c)
	}
	stored, err := s.beats.submit(ctx, agentBeat{hash: hash, h: h})
	if err != nil {
		return err
	}
	if !stored {
		srv, err := s.store.ServerByToken(ctx, s.pool, hash)
		if errors.Is(err, db.ErrNotFound) {
			return badAgentToken(c)
		}
		if err != nil {
			return err
		}
		if err := s.recordHeartbeatWithEvents(ctx, srv.ID, h); err != nil {
			return err
		}
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func badAgentToken(c *fiber.Ctx) error {
	c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="pasarela-agent"`)
	return fiber.NewError(fiber.StatusUnauthorized, "Token de servidor inválido o reemplazado.")
}

func (s *Server) recordHeartbeatWithEvents(ctx context.Context, id int64, h db.Heartbeat) error {
	to, err := s.store.UsersWithModule(ctx, s.db, db.ModuleServers)
	if err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ch, err := s.store.RecordHeartbeat(ctx, tx, id, h)
		if err != nil {
			return err
		}
		link := fmt.Sprintf("/app/servidor/%d", id)
		if ch.Recovered {
			if err := s.queue.Emit(ctx, tx, s.store, jobs.Event{Evento: "servidor_recuperado",
				Titulo: fmt.Sprintf("El servidor «%s» volvió a responder", ch.Nombre),
				Texto:  "Su agente envió un latido otra vez.", Enlace: link, UserIDs: to}); err != nil {
				return err
			}
		}
		if ch.CrossedDisk {
			if err := s.queue.Emit(ctx, tx, s.store, jobs.Event{Evento: "servidor_umbral",
				Titulo: fmt.Sprintf("El disco de «%s» está al %.1f %%", ch.Nombre, h.Disk),
				Texto:  fmt.Sprintf("Superó el umbral de %.0f %%.", ch.UmbralDisco), Enlace: link, UserIDs: to}); err != nil {
				return err
			}
		}
		return nil
	})
}

// readHeartbeat reads and checks the six figures: 415 for another content
// type, 400 for anything but a JSON object, 413 past 4 KiB, 422 naming each
// missing or out-of-range figure.
func readHeartbeat(c *fiber.Ctx) (db.Heartbeat, fieldErrors, error) {
	var h db.Heartbeat
	if len(c.Body()) > maxHeartbeatBody {
		return h, nil, fiber.NewError(fiber.StatusRequestEntityTooLarge, "El latido supera 4 KiB.")
	}
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return h, nil, fiber.NewError(fiber.StatusUnsupportedMediaType, "Content-Type debe ser application/json.")
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return h, nil, fiber.NewError(fiber.StatusBadRequest, "El cuerpo debe ser un objeto JSON válido.")
	}
	fe := fieldErrors{}
	number := func(name string, lo, hi float64, msg string) float64 {
		raw, ok := obj[name]
		if !ok {
			fe[name] = "Es obligatorio."
			return 0
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || string(bytes.TrimSpace(raw)) == "null" || math.IsNaN(v) || v < lo || v > hi {
			fe[name] = msg
		}
		return v
	}
	percent := "Debe ser un porcentaje entre 0 y 100."
	h.CPU = number("cpu", 0, 100, percent)
	h.RAM = number("ram", 0, 100, percent)
	h.Swap = number("swap", 0, 100, percent)
	h.Disk = number("disk", 0, 100, percent)
	tcp := number("tcp", 0, 1e9, "Debe ser un número entero de conexiones, 0 o más.")
	h.Load1 = number("load1", 0, 1e6, "Debe ser un número, 0 o más.")
	if tcp != math.Trunc(tcp) {
		fe["tcp"] = "Debe ser un número entero de conexiones, 0 o más."
	}
	h.TCP = int64(tcp)
	return h, fe, nil
}
