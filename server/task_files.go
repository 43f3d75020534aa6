package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"pasarela/db"
)

// taskDir is where a task's files live: UPLOAD_DIR/tareas/<id>. Only numbers
// and names the server made ever reach the file system.
func (s *Server) taskDir(taskID int64) string {
	return filepath.Join(s.cfg.UploadDir, "tareas", strconv.FormatInt(taskID, 10))
}

// uploadTaskFile is POST /tarea/:id/adjuntos (multipart field archivo). The
// file is written under a temporary name, its row inserted, and the file
// renamed before the commit: a failure anywhere leaves neither file nor row.
func (s *Server) uploadTaskFile(c *fiber.Ctx) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	fh, err := c.FormFile("archivo")
	if err != nil {
		return fiber.NewError(fiber.StatusUnprocessableEntity, "Elija un archivo para adjuntar.")
	}
	if fh.Size > s.cfg.UploadMaxBytes {
		return fiber.NewError(fiber.StatusRequestEntityTooLarge,
			fmt.Sprintf("El archivo supera el máximo de %d bytes.", s.cfg.UploadMaxBytes))
	}
	ctx := c.UserContext()
	if _, err := s.store.Task(ctx, s.db, id); errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe esa tarea.")
	} else if err != nil {
		return err
	}
	dir := s.taskDir(id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	name := randomName()
	tmp, err := os.CreateTemp(dir, ".subiendo-*")
	if err != nil {
		return fmt.Errorf("temporary file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	src, err := fh.Open()
	if err != nil {
		tmp.Close()
		return fmt.Errorf("open upload: %w", err)
	}
	n, err := io.Copy(tmp, io.LimitReader(src, s.cfg.UploadMaxBytes+1))
	src.Close()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write upload: %w", err)
	}
	u := currentUser(c)
	final := filepath.Join(dir, name)
	f := &db.TaskFile{TareaID: id, UserID: &u.ID, Nombre: uploadName(fh.Filename), Archivo: name, Bytes: n}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.store.AddTaskFile(ctx, tx, f); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), final)
	})
	if err != nil {
		os.Remove(final)
		return err
	}
	return s.afterTaskFiles(c, id)
}

// uploadName keeps the name a person gave a file, for showing and downloading
// only: its last path element, storable, at most 255 bytes.
func uploadName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" || name == "" {
		name = "archivo"
	}
	return cleanText(name, 255)
}

func randomName() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fileParams(c *fiber.Ctx) (taskID, fileID int64, err error) {
	if taskID, err = strconv.ParseInt(c.Params("id"), 10, 64); err == nil {
		fileID, err = strconv.ParseInt(c.Params("adj"), 10, 64)
	}
	if err != nil || taskID < 1 || fileID < 1 {
		return 0, 0, fiber.NewError(fiber.StatusNotFound, "No existe ese adjunto.")
	}
	return taskID, fileID, nil
}

// downloadTaskFile sends a file as an attachment, never shown inline, with
// its original name safely encoded (RFC 6266 / 5987).
func (s *Server) downloadTaskFile(c *fiber.Ctx) error {
	taskID, fileID, err := fileParams(c)
	if err != nil {
		return err
	}
	f, err := s.store.TaskFile(c.UserContext(), s.db, taskID, fileID)
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese adjunto.")
	} else if err != nil {
		return err
	}
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, f.Nombre)
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, ascii, url.PathEscape(f.Nombre)))
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "sandbox; default-src 'none'")
	return c.SendFile(filepath.Join(s.taskDir(taskID), f.Archivo))
}

// deleteTaskFile is DELETE /tarea/:id/adjuntos/:adj (and POST …/eliminar).
func (s *Server) deleteTaskFile(c *fiber.Ctx) error {
	taskID, fileID, err := fileParams(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	f, err := s.store.TaskFile(ctx, s.db, taskID, fileID)
	if errors.Is(err, db.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "No existe ese adjunto.")
	} else if err != nil {
		return err
	}
	if err := s.store.DeleteTaskFile(ctx, s.db, taskID, fileID); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.taskDir(taskID), f.Archivo)); err != nil && !errors.Is(err, os.ErrNotExist) {
		requestLogger(c, s.log).Error("remove attachment", "error", err)
	}
	return s.afterTaskFiles(c, taskID)
}

// afterTaskFiles answers a change of a task's files: the files section for
// htmx, the task page otherwise.
func (s *Server) afterTaskFiles(c *fiber.Ctx, taskID int64) error {
	if !isHTMX(c) {
		return c.Redirect(fmt.Sprintf("/tarea/%d#adjuntos", taskID), fiber.StatusSeeOther)
	}
	data, err := s.taskPageData(c, taskID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "partials/tasks/files", "partials/tasks/files", data)
}
