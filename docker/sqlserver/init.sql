-- The SQL Server source: a database with CDC enabled, a sample table and Debezium's signal table,
-- both captured. Run once by the sqlserver-init service.
IF DB_ID('cdc') IS NULL CREATE DATABASE cdc;
GO
USE cdc;
GO
EXEC sys.sp_cdc_enable_db;
GO
CREATE TABLE dbo.orders (id BIGINT NOT NULL PRIMARY KEY, status NVARCHAR(20) NOT NULL, amount DECIMAL(12, 2));
GO
CREATE TABLE dbo.cdc_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL);
GO
EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', @role_name = NULL;
GO
EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'cdc_signal', @role_name = NULL;
GO
INSERT INTO dbo.orders (id, status, amount) SELECT TOP 10000 ROW_NUMBER() OVER (ORDER BY (SELECT NULL)), 'new', 1.25
FROM sys.all_objects a CROSS JOIN sys.all_objects b;
GO
