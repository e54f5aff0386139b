package postgres

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestOpenRetriesTableCreationLostToTypeExists is a regression test found by the fault
// campaign (faults/): three worker processes opening the same PostgreSQL store at
// once, on a database where the table did not exist yet, and one failed with
//
//	create table leasehold_registry: ERROR: type "leasehold_registry" already exists (SQLSTATE 42710)
//
// CREATE TABLE IF NOT EXISTS races against itself on the catalog: a session that passed the
// existence checks while another one was creating the table fails on whichever catalog entry
// it reaches after the other committed: the table (42P07), the row type's unique index
// (23505), or the row type by name (42710, duplicate_object). createTable retries the first
// two, not the third, so Open fails although a second attempt would find the table (T1: of
// concurrent creators, all must succeed).
//
// The race itself cannot be scheduled from outside the server, so the test plays the server:
// a fake PostgreSQL on loopback answers the first CREATE TABLE with 42710 (as the losing
// session gets it) and the next with success. Open must succeed, after two CREATE TABLEs.
func TestOpenRetriesTableCreationLostToTypeExists(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var creates atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fakeServe(c, &creates)
		}
	}()
	s, err := Open(t.Context(), "postgres://fake@"+ln.Addr().String()+"/test?sslmode=disable")
	if err != nil {
		t.Errorf("Open after a CREATE TABLE that lost the race with SQLSTATE 42710: %v; want a retry that finds the table", err)
	} else {
		s.Close()
	}
	ln.Close()
	<-done
	if n := creates.Load(); err == nil && n != 2 {
		t.Errorf("%d CREATE TABLE statements, want 2 (the one that lost, then the retry)", n)
	}
}

// fakeServe speaks just enough of PostgreSQL's protocol to one connection for Open: trust
// authentication, the ping (an empty query), and CREATE TABLE, failing the first one.
func fakeServe(c net.Conn, creates *atomic.Int32) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	if m, err := be.ReceiveStartupMessage(); err != nil {
		return
	} else if _, ok := m.(*pgproto3.StartupMessage); !ok {
		return // sslmode=disable: no SSLRequest expected
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "17.0"})
	be.Send(&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"})
	be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	for {
		m, err := be.Receive()
		if err != nil {
			return
		}
		q, ok := m.(*pgproto3.Query)
		if !ok {
			return // Terminate, or a message Open does not send
		}
		switch {
		case strings.HasPrefix(q.String, "CREATE TABLE") && creates.Add(1) == 1:
			be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42710", Message: `type "leasehold_registry" already exists`})
		case strings.HasPrefix(q.String, "CREATE TABLE"):
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("CREATE TABLE")})
		default:
			be.Send(&pgproto3.EmptyQueryResponse{})
		}
		be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		if be.Flush() != nil {
			return
		}
	}
}
