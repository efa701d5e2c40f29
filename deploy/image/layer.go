package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The user database: root, whom the files belong to, and nonroot, who runs
// the binary (its home is the working directory). No shell is in the image.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", uid, gid, workDir)
	group  = fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)
)

// layerFiles describes what writeLayer wrote.
type layerFiles struct {
	binary, tarSize, gzSize int64
	binarySHA256            string
	text                    map[string]string // path of /etc/passwd and /etc/group to their SHA-256
}

// writeLayer writes the image's one layer as a gzip tar to gz: the binary at
// /bomstream (root-owned, 0755), /etc/passwd and /etc/group, the working
// directory /data (owned by nonroot) and /tmp (1777). Entries are in a fixed
// order, in USTAR format, and all carry the same time, so the same binary
// gives the same bytes.
func writeLayer(gz, bin string, created time.Time) (layerFiles, error) {
	out := layerFiles{text: map[string]string{}}
	f, err := os.Create(gz)
	if err != nil {
		return out, err
	}
	defer f.Close()
	cw := &countingWriter{w: f}
	zw, err := gzip.NewWriterLevel(cw, gzip.DefaultCompression)
	if err != nil {
		return out, err
	}
	tw := &countingWriter{w: zw}
	t := tar.NewWriter(tw)

	hdr := func(name string, typ byte, mode int64, owner int, size int64) *tar.Header {
		h := &tar.Header{
			Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: created,
			Uid: 0, Gid: 0, Uname: "root", Gname: "root", Format: tar.FormatUSTAR,
		}
		if owner != 0 {
			h.Uid, h.Gid, h.Uname, h.Gname = owner, owner, "nonroot", "nonroot"
		}
		return h
	}
	file := func(name, content string) error {
		if err := t.WriteHeader(hdr(name, tar.TypeReg, 0o644, 0, int64(len(content)))); err != nil {
			return err
		}
		out.text["/"+name] = sha256Hex([]byte(content))
		_, err := io.WriteString(t, content)
		return err
	}

	b, err := os.Open(bin)
	if err != nil {
		return out, err
	}
	defer b.Close()
	st, err := b.Stat()
	if err != nil {
		return out, err
	}
	out.binary = st.Size()
	if err := t.WriteHeader(hdr(strings.TrimPrefix(binaryPath, "/"), tar.TypeReg, 0o755, 0, st.Size())); err != nil {
		return out, err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(t, h), b); err != nil {
		return out, fmt.Errorf("copy %s: %w", bin, err)
	}
	out.binarySHA256 = hex.EncodeToString(h.Sum(nil))

	if err := t.WriteHeader(hdr(strings.TrimPrefix(workDir, "/")+"/", tar.TypeDir, 0o755, uid, 0)); err != nil {
		return out, err
	}
	if err := t.WriteHeader(hdr("etc/", tar.TypeDir, 0o755, 0, 0)); err != nil {
		return out, err
	}
	if err := file("etc/group", group); err != nil {
		return out, err
	}
	if err := file("etc/passwd", passwd); err != nil {
		return out, err
	}
	if err := t.WriteHeader(hdr("tmp/", tar.TypeDir, 0o1777, 0, 0)); err != nil {
		return out, err
	}
	if err := t.Close(); err != nil {
		return out, err
	}
	if err := zw.Close(); err != nil {
		return out, err
	}
	out.tarSize, out.gzSize = tw.n, cw.n
	return out, f.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
