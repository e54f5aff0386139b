// Package gcs is a [store.Store] on Google Cloud Storage: each document is a JSON object
// stored as one object of a bucket, under a prefix.
package gcs
