-- MySQL source for `cdc-backfill capture debezium` (run by the image on first start, database cdc).
-- Debezium's MySQL connector reads the binlog (row format, full images: the server's defaults in 8.4).
CREATE TABLE cdc.orders (id BIGINT NOT NULL PRIMARY KEY, status VARCHAR(20) NOT NULL, amount DECIMAL(12, 2));
-- The signal table Debezium and cdc-backfill share: id, type, data first.
CREATE TABLE cdc.cdc_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL);
CREATE USER IF NOT EXISTS 'dbz'@'%' IDENTIFIED BY 'dbz';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'dbz'@'%';
GRANT INSERT, UPDATE, DELETE ON cdc.cdc_signal TO 'dbz'@'%';
